package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.215.14":          true,
		"1.1.1.1":                true,
		"2606:4700::1111":        true,
		"::ffff:1.1.1.1":         true,
		"64:ff9b::101:101":       true, // NAT64 of 1.1.1.1
		"127.0.0.1":              false,
		"127.8.9.10":             false,
		"10.1.2.3":               false,
		"172.16.0.1":             false,
		"172.31.255.255":         false,
		"192.168.1.1":            false,
		"169.254.169.254":        false, // cloud metadata
		"100.64.0.1":             false, // CGNAT
		"100.100.100.200":        false, // metadata in the shared range
		"0.0.0.0":                false,
		"0.1.2.3":                false,
		"224.0.0.1":              false,
		"255.255.255.255":        false,
		"198.18.0.1":             false,
		"192.0.0.192":            false,
		"::1":                    false,
		"::":                     false,
		"fe80::1":                false,
		"fc00::1":                false,
		"fd00:ec2::254":          false, // metadata over IPv6
		"ff02::1":                false,
		"::ffff:127.0.0.1":       false,
		"::ffff:10.0.0.1":        false,
		"64:ff9b::a9fe:a9fe":     false, // NAT64 of 169.254.169.254
		"2002:7f00:1::1":         false, // 6to4 of 127.0.0.1
		"2001:0:4136:e378::1":    false, // Teredo
		"2001:db8::1":            false,
		"::ffff:169.254.169.254": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v; want %v", addr, got, want)
		}
	}
}

// counting is a local server that counts its requests.
type counting struct {
	*httptest.Server
	requests atomic.Int32
}

func serve(t *testing.T, listen string, tlsOn bool, h http.HandlerFunc) *counting {
	t.Helper()
	c := &counting{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.requests.Add(1)
		h(w, r)
	}))
	if listen != "" {
		l, err := net.Listen("tcp", listen)
		if err != nil {
			t.Fatal(err)
		}
		srv.Listener.Close()
		srv.Listener = l
	}
	if tlsOn {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	c.Server = srv
	return c
}

func ok(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "hello") }

func redirectTo(url string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, url, http.StatusFound) }
}

func get(t *testing.T, c *http.Client, url string) (string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func TestRefusesNonPublicAddresses(t *testing.T) {
	target := serve(t, "", false, ok)
	_, err := get(t, New(Options{}), target.URL)
	if !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("GET %s: %v; want ErrBlockedAddress", target.URL, err)
	}
	if n := target.requests.Load(); n != 0 {
		t.Errorf("the server got %d requests; want none", n)
	}
	// The operator's opt-in, whole or by range.
	for _, o := range []Options{{AllowPrivate: true}, {Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}} {
		if body, err := get(t, New(o), target.URL); err != nil || body != "hello" {
			t.Errorf("with %+v: %q, %v; want hello", o, body, err)
		}
	}
	if _, err := get(t, New(Options{Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}), target.URL); !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("with another range allowed: %v; want ErrBlockedAddress", err)
	}
}

func TestRedirects(t *testing.T) {
	private := Options{AllowPrivate: true}
	elsewhere := serve(t, "127.0.0.2:0", false, ok)
	plain := serve(t, "127.0.0.1:0", false, ok)
	loop := serve(t, "", false, func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(r.URL.Path, "/r/%d", &n)
		http.Redirect(w, r, fmt.Sprintf("/r/%d", n+1), http.StatusFound)
	})
	for _, tt := range []struct {
		name    string
		handler http.HandlerFunc
		tls     bool
		want    error
		reached *counting // must not have been asked
	}{
		{name: "on the same host", handler: func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/moved" {
				ok(w, r)
				return
			}
			http.Redirect(w, r, "/moved", http.StatusMovedPermanently)
		}},
		{name: "to another host", handler: redirectTo(elsewhere.URL + "/"), want: ErrOffHostRedirect, reached: elsewhere},
		{name: "to the metadata address", handler: redirectTo("http://169.254.169.254/latest/meta-data/"), want: ErrOffHostRedirect},
		{name: "from https to http on the same host", handler: redirectTo(plain.URL + "/"), tls: true, want: ErrDowngrade, reached: plain},
		{name: "in a loop", handler: redirectTo(loop.URL + "/r/0"), want: ErrTooManyRedirect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			first := serve(t, "127.0.0.1:0", tt.tls, tt.handler)
			c := New(private)
			if tt.tls {
				c.Transport.(limitBody).rt.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: certPool(first)}
			}
			body, err := get(t, c, first.URL+"/start")
			if tt.want == nil {
				if err != nil || body != "hello" {
					t.Fatalf("%q, %v; want hello", body, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("%q, %v; want %v", body, err, tt.want)
			}
			if tt.reached != nil && tt.reached.requests.Load() != 0 {
				t.Errorf("the redirect's target was asked")
			}
		})
	}
	if n := loop.requests.Load(); n != DefaultMaxRedirects {
		t.Errorf("the loop was followed %d times; want %d", n, DefaultMaxRedirects)
	}
}

// certPool trusts the test server's certificate.
func certPool(s *counting) *x509.CertPool {
	return s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
}

// TestRebinding: a name that resolves to an allowed address for the first request and to
// a private one for the redirect on the same host is refused when the connection is made.
func TestRebinding(t *testing.T) {
	first := serve(t, "127.0.0.1:0", false, nil)
	second := serve(t, "127.0.0.2:0", false, ok)
	_, secondPort, _ := net.SplitHostPort(second.Listener.Addr().String())
	first.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first.requests.Add(1)
		http.Redirect(w, r, "http://rebind.test:"+secondPort+"/", http.StatusFound)
	})
	answers := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("127.0.0.2")}
	c := New(Options{
		Allow:    []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Resolver: fakeDNS(t, answers),
	})
	_, firstPort, _ := net.SplitHostPort(first.Listener.Addr().String())
	_, err := get(t, c, "http://rebind.test:"+firstPort+"/")
	if !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("%v; want ErrBlockedAddress", err)
	}
	if first.requests.Load() != 1 || second.requests.Load() != 0 {
		t.Errorf("requests: first %d, second %d; want 1 and 0", first.requests.Load(), second.requests.Load())
	}
}

// fakeDNS is a resolver whose DNS server answers A questions with answers in turn (the last
// one from then on) and AAAA questions with nothing.
func fakeDNS(t *testing.T, answers []netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var asked atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if q.Type == dnsmessage.TypeA {
				i := min(int(asked.Add(1))-1, len(answers)-1)
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0},
					dnsmessage.AResource{A: answers[i].As4()})
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func TestLimits(t *testing.T) {
	big := strings.Repeat("x", 1000)
	declared := serve(t, "", false, func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, big) })
	streamed := serve(t, "", false, func(w http.ResponseWriter, _ *http.Request) {
		for range 10 {
			io.WriteString(w, big[:100])
			w.(http.Flusher).Flush()
		}
	})
	stalled := serve(t, "", false, func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := New(Options{AllowPrivate: true, MaxBytes: 999, Timeout: 300 * time.Millisecond})
	for _, url := range []string{declared.URL, streamed.URL} {
		if body, err := get(t, c, url); !errors.Is(err, ErrTooLarge) {
			t.Errorf("GET 1000 bytes with a limit of 999: %d bytes, %v; want ErrTooLarge", len(body), err)
		}
	}
	exact := New(Options{AllowPrivate: true, MaxBytes: 1000})
	for _, url := range []string{declared.URL, streamed.URL} {
		if body, err := get(t, exact, url); err != nil || len(body) != 1000 {
			t.Errorf("GET 1000 bytes with a limit of 1000: %d bytes, %v", len(body), err)
		}
	}
	var timeout interface{ Timeout() bool }
	if _, err := get(t, c, stalled.URL); !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &timeout) && timeout.Timeout()) {
		t.Errorf("a stalled body: %v; want the client's timeout", err)
	}
}
