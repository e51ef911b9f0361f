package fetch

import "net/netip"

// specialRange is one row of the special-purpose address registries: a range that is no
// ordinary public web server's address. A range that embeds an IPv4 address
// (translation, 6to4) is judged by that address instead: v4At is where its four bytes
// start, 0 when it embeds none.
type specialRange struct {
	prefix netip.Prefix
	name   string
	v4At   int
}

// special is every range Public refuses (or, for v4At, looks into), from IANA's IPv4 and
// IPv6 Special-Purpose Address Registries (https://www.iana.org/assignments/iana-ipv4-special-registry,
// https://www.iana.org/assignments/iana-ipv6-special-registry), the multicast ranges, and
// the IPv6 forms that carry an IPv4 address or were retired. Ranges the registries mark
// globally reachable (anycast relays, AS112) are refused too: none is a web site.
var special = []specialRange{
	// IPv4
	{pfx("0.0.0.0/8"), `"this network"`, 0},
	{pfx("10.0.0.0/8"), "private use", 0},
	{pfx("100.64.0.0/10"), "shared address space (CGNAT; 100.100.100.200 is a cloud metadata address)", 0},
	{pfx("127.0.0.0/8"), "loopback", 0},
	{pfx("169.254.0.0/16"), "link local (169.254.169.254 is the cloud metadata address)", 0},
	{pfx("172.16.0.0/12"), "private use", 0},
	{pfx("192.0.0.0/24"), "IETF protocol assignments (service continuity, dummy, PCP and TURN anycast, NAT64 discovery)", 0},
	{pfx("192.0.2.0/24"), "documentation (TEST-NET-1)", 0},
	{pfx("192.31.196.0/24"), "AS112-v4", 0},
	{pfx("192.52.193.0/24"), "AMT", 0},
	{pfx("192.88.99.0/24"), "deprecated 6to4 relay anycast", 0},
	{pfx("192.168.0.0/16"), "private use", 0},
	{pfx("192.175.48.0/24"), "AS112 direct delegation", 0},
	{pfx("198.18.0.0/15"), "benchmarking", 0},
	{pfx("198.51.100.0/24"), "documentation (TEST-NET-2)", 0},
	{pfx("203.0.113.0/24"), "documentation (TEST-NET-3)", 0},
	{pfx("224.0.0.0/4"), "multicast", 0},
	{pfx("240.0.0.0/4"), "reserved, and the limited broadcast address", 0},

	// IPv6: the forms that carry an IPv4 address first.
	{pfx("::ffff:0:0/96"), "IPv4-mapped", 12},
	{pfx("64:ff9b::/96"), "IPv4/IPv6 translation (NAT64)", 12},
	{pfx("2002::/16"), "6to4", 2},
	{pfx("::/96"), "IPv4-compatible (deprecated), the unspecified and the loopback address", 0},
	{pfx("::ffff:0:0:0/96"), "IPv4-translated (SIIT)", 0},
	{pfx("64:ff9b:1::/48"), "IPv4/IPv6 translation, local use", 0},
	{pfx("100::/64"), "discard-only", 0},
	{pfx("100:0:0:1::/64"), "dummy prefix", 0},
	{pfx("2001::/23"), "IETF protocol assignments (Teredo, benchmarking, ORCHID, AMT, AS112, anycast relays)", 0},
	{pfx("2001:db8::/32"), "documentation", 0},
	{pfx("2620:4f:8000::/48"), "AS112 direct delegation", 0},
	{pfx("3fff::/20"), "documentation", 0},
	{pfx("5f00::/16"), "segment routing SIDs", 0},
	{pfx("fc00::/7"), "unique local", 0},
	{pfx("fe80::/10"), "link local", 0},
	{pfx("fec0::/10"), "site local (deprecated)", 0},
	{pfx("ff00::/8"), "multicast", 0},
}

// globalUnicast6 is the only IPv6 space allocated for global unicast (IANA's IPv6 Address
// Space registry); outside it, bar the forms above, nothing is a public address.
var globalUnicast6 = pfx("2000::/3")

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// Public reports whether addr is an ordinary public unicast address: in no special-purpose
// range, or, in a range that carries an IPv4 address, with a public one there.
func Public(addr netip.Addr) bool {
	if !addr.IsValid() {
		return false
	}
	for _, r := range special {
		if !r.prefix.Contains(addr) {
			continue
		}
		if r.v4At == 0 {
			return false
		}
		b := addr.As16()
		return Public(netip.AddrFrom4([4]byte(b[r.v4At : r.v4At+4])))
	}
	if addr.Is6() && !globalUnicast6.Contains(addr) {
		return false
	}
	return addr.IsGlobalUnicast()
}
