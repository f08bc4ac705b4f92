package registry

import (
	"sync"
	"testing"
)

func TestCatalogs(t *testing.T) {
	var c Catalogs
	if _, _, fresh := c.Get("a"); fresh {
		t.Fatal("an agent with no catalog has a fresh one")
	}
	cat := &Catalog{}
	c.Put("a", Built{Catalog: cat, Gen: c.Gen()})
	b, gen, fresh := c.Get("a")
	if !fresh || b.Catalog != cat || gen != b.Gen {
		t.Fatalf("just built: fresh %v, catalog kept %v, gen %d/%d", fresh, b.Catalog == cat, gen, b.Gen)
	}
	if _, _, fresh := c.Get("b"); fresh {
		t.Fatal("another agent shares a's catalog")
	}
	c.Invalidate()
	b, gen, fresh = c.Get("a")
	if fresh || b.Catalog != cat || gen == b.Gen {
		t.Fatalf("after a change: fresh %v (want stale, still returned: %v), gen %d/%d", fresh, b.Catalog == cat, gen, b.Gen)
	}
	// A catalog built from what was seen before a change stays stale.
	c.Put("a", Built{Catalog: cat, Gen: gen - 1})
	if _, _, fresh := c.Get("a"); fresh {
		t.Fatal("a catalog of an older generation is fresh")
	}
}

func TestCatalogsConcurrent(t *testing.T) {
	var c Catalogs
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if i%2 == 0 {
					c.Invalidate()
				}
				c.Put("a", Built{Catalog: &Catalog{}, Gen: c.Gen()})
				c.Get("a")
			}
		}()
	}
	wg.Wait()
	if c.Gen() != 4*200 {
		t.Fatalf("generation %d after 800 changes", c.Gen())
	}
}
