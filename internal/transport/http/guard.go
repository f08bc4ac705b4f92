package httptransport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// Resolver looks up a host's addresses. *net.Resolver satisfies it; tests
// pass a fake so that no query leaves the machine.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// DialFunc opens a connection to addr, which is always an IP and a port
// once the guard has checked it.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// guard is the dialer of every connection the transport makes. It resolves
// the host itself and checks each address just before connecting, then
// dials the address it checked, never the name: a DNS answer that changes
// between a check and the connect (DNS rebinding) cannot slip past it.
type guard struct {
	allowPrivate bool
	resolve      Resolver
	dial         DialFunc
}

// dialError marks a failure to connect: nothing was sent, so the request
// may be retried.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

func (g *guard) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	var ips []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		ips = []netip.Addr{ip}
	} else {
		found, err := g.resolve.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, &dialError{err}
		}
		for _, a := range found {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			// net.IP holds IPv4 in 16 bytes; dial it as IPv4.
			ips = append(ips, ip.Unmap().WithZone(a.Zone))
		}
		if len(ips) == 0 {
			return nil, &dialError{fmt.Errorf("%s has no IP addresses", host)}
		}
	}
	var blocked *BlockedAddressError
	var lastErr error
	for _, ip := range ips {
		if reason, always := classify(ip); reason != "" && (always || !g.allowPrivate) {
			if blocked == nil {
				blocked = &BlockedAddressError{Host: host, IP: ip, Reason: reason, Always: always}
			}
			continue
		}
		c, err := g.dial(ctx, network, net.JoinHostPort(ip.String(), port))
		if err == nil {
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	if lastErr != nil {
		return nil, &dialError{lastErr}
	}
	return nil, blocked
}

var (
	// Cloud metadata services (AWS, GCP, Azure, OpenStack: 169.254.169.254;
	// AWS over IPv6: fd00:ec2::254; Alibaba: 100.100.100.200). They hand out
	// credentials to whoever asks from inside the instance, so they are
	// refused even when private networks are allowed.
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("169.254.170.2"), // AWS ECS task metadata
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("100.100.100.200"),
	}
	cgnat    = netip.MustParsePrefix("100.64.0.0/10")
	thisNet  = netip.MustParsePrefix("0.0.0.0/8")
	reserved = netip.MustParsePrefix("240.0.0.0/4") // includes 255.255.255.255
	nat64    = netip.MustParsePrefix("64:ff9b::/96")
)

// CheckAddr is the one address check of every outbound connection Nexus
// makes (the transport's guard, OAuth, metadata and JWKS fetches): nil if
// ip may be connected to, else a *BlockedAddressError saying why. Call it
// on the address actually dialed, after resolution.
func CheckAddr(ip netip.Addr, allowPrivate bool) error {
	if reason, always := classify(ip); reason != "" && (always || !allowPrivate) {
		return &BlockedAddressError{Host: ip.String(), IP: ip.WithZone("").Unmap(), Reason: reason, Always: always}
	}
	return nil
}

// classify says why ip is refused ("" if it is not). always marks
// addresses refused even when private networks are allowed. Loopback is
// always allowed: local servers are the common case.
func classify(ip netip.Addr) (reason string, always bool) {
	ip = ip.WithZone("").Unmap()
	if nat64.Contains(ip) {
		// A NAT64 gateway would forward to the embedded IPv4 address.
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return "a cloud metadata service address", true
		}
	}
	switch {
	case ip.IsLoopback():
		return "", false
	case ip.IsUnspecified():
		return "the unspecified address", true // never a server
	case ip.IsLinkLocalUnicast():
		return "a link-local address", false
	case ip.IsMulticast():
		return "a multicast address", true // never a server
	case ip.IsPrivate():
		return "a private network address", false
	case cgnat.Contains(ip):
		return "a carrier-grade NAT (shared) address", false
	case thisNet.Contains(ip), reserved.Contains(ip):
		return "a reserved address", false
	}
	return "", false
}

// isDialError reports whether err is a connect failure (safe to retry) and
// not a refusal by the guard.
func isDialError(err error) bool {
	var d *dialError
	var b *BlockedAddressError
	return errors.As(err, &d) && !errors.As(err, &b)
}
