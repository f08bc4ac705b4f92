package registry

import "sync"

// Catalogs keeps each agent's Catalog between lookups and says when one is
// stale. Each holds only what its agent may see, so one agent's lookups
// never resolve a tool it cannot use (the names themselves are the same
// for every agent; see Namer). Any change of a server or its lists
// (Invalidate) makes every catalog stale; the next lookup rebuilds it.
// The zero value is ready; it is safe for concurrent use.
type Catalogs struct {
	mu      sync.Mutex
	gen     uint64 // bumped by Invalidate
	byAgent map[string]Built
}

// Built is a catalog as built for one agent: the generation it was built
// at and each server's tool list version (mcp.Client.ToolsVersion) it saw.
type Built struct {
	Catalog *Catalog
	Gen     uint64
	Vers    map[string]uint64
}

// Invalidate makes every catalog stale: a server came, went or changed
// its lists.
func (c *Catalogs) Invalidate() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

// Gen is the current generation; a catalog (or anything decided from
// one) reached at another is stale.
func (c *Catalogs) Gen() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Get is agent's catalog, the current generation, and whether the
// catalog was built at it (fresh). Without one, b is zero.
func (c *Catalogs) Get(agent string) (b Built, gen uint64, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byAgent[agent]
	return b, c.gen, ok && b.Gen == c.gen
}

// Put keeps b as agent's catalog.
func (c *Catalogs) Put(agent string, b Built) {
	c.mu.Lock()
	if c.byAgent == nil {
		c.byAgent = map[string]Built{}
	}
	c.byAgent[agent] = b
	c.mu.Unlock()
}
