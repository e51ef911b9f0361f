package fetch

import (
	"net/netip"
	"testing"
)

// TestSpecialRangesRowByRow: the first and the last address of every row are not public
// (a row that carries an IPv4 address, with a private one inside), and the address just
// past a row's end is judged by what follows, not by the row.
func TestSpecialRangesRowByRow(t *testing.T) {
	for _, r := range special {
		first, last := r.prefix.Addr(), lastAddr(r.prefix)
		for _, a := range []netip.Addr{first, last} {
			if r.v4At > 0 {
				b := a.As16()
				copy(b[r.v4At:r.v4At+4], []byte{10, 1, 2, 3})
				a = netip.AddrFrom16(b)
			}
			if Public(a) {
				t.Errorf("%s (%s, %s) is public", a, r.prefix, r.name)
			}
		}
	}
}

// TestPublicSpecialForms: the addresses the registries' rows catch that netip alone does
// not, and the IPv4 addresses carried in IPv6 forms.
func TestPublicSpecialForms(t *testing.T) {
	for addr, want := range map[string]bool{
		"64:ff9b:1::101:101":       false, // local-use NAT64, even of a public address
		"::ffff:0:7f00:1":          false, // IPv4-translated loopback
		"::ffff:0:101:101":         false, // IPv4-translated, not routed on the internet
		"::7f00:1":                 false, // IPv4-compatible 127.0.0.1
		"::101:101":                false, // IPv4-compatible, deprecated
		"fec0::1":                  false, // site local
		"3fff::1":                  false, // documentation
		"3fff:fff:ffff::1":         false,
		"5f00::1":                  false, // segment routing
		"100:0:0:1::1":             false, // dummy prefix
		"2001:2::1":                false, // benchmarking
		"2001:20::1":               false, // ORCHIDv2
		"4000::1":                  false, // outside global unicast
		"192.88.99.1":              false,
		"192.31.196.1":             false,
		"2620:4f:8000::1":          false,
		"2620:4f:8001::1":          true, // past the AS112 /48
		"64:ff9b::808:808":         true, // NAT64 of 8.8.8.8
		"64:ff9b::7f00:1":          false,
		"2002:808:808::1":          true, // 6to4 of 8.8.8.8
		"2002:a00:1::1":            false,
		"::ffff:8.8.8.8":           true,
		"::ffff:192.168.0.1":       false,
		"2a00:1450:4001:80b::200e": true,
		"3ffe::1":                  true, // the 6bone's range, returned to global unicast
		"11.0.0.0":                 true, // just past 10.0.0.0/8
		"9.255.255.255":            true,
		"223.255.255.255":          true,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v; want %v", addr, got, want)
		}
	}
}

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	bits := p.Bits()
	for i := range b {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
