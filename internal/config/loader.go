package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sitetools/sitetools/internal/fetch"
)

// loader reads variables through getenv and collects every problem, one per variable.
type loader struct {
	getenv func(string) string
	errs   []error
}

func (l *loader) fail(name, msg string) {
	l.errs = append(l.errs, fmt.Errorf("%s %s", name, msg))
}

func (l *loader) str(name, def string) string {
	v, ok := l.lookup(name)
	if !ok {
		return def
	}
	return v
}

func (l *loader) lookup(name string) (string, bool) {
	v := strings.TrimSpace(l.getenv(name))
	return v, v != ""
}

// maxPrefix bounds a task prefix: the longest model instructions are a sentence.
const maxPrefix = 500

// prefix reads a task prefix as written, trailing spaces included (they matter: "query: "),
// with "\n" standing for a line break; unset or blank is def, "none" is no prefix.
func (l *loader) prefix(name, def string) string {
	v := l.getenv(name)
	switch strings.TrimSpace(v) {
	case "":
		return def
	case "none":
		return ""
	}
	v = strings.ReplaceAll(v, `\n`, "\n")
	switch {
	case utf8.RuneCountInString(v) > maxPrefix:
		l.fail(name, fmt.Sprintf("must be at most %d characters", maxPrefix))
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsControl(r) && r != '\n' }) >= 0:
		l.fail(name, `must not contain control characters (write a line break as \n)`)
	}
	return v
}

func (l *loader) integer(name string, def, lo, hi int) int {
	v, ok := l.lookup(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		l.fail(name, fmt.Sprintf("must be a whole number from %d to %d, got %q", lo, hi, v))
		return def
	}
	return n
}

func (l *loader) float(name string, def float64) float64 {
	v, ok := l.lookup(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		l.fail(name, fmt.Sprintf("must be a number ≥ 0, got %q", v))
		return def
	}
	return f
}

func (l *loader) duration(name string, def time.Duration) time.Duration {
	v, ok := l.lookup(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		l.fail(name, fmt.Sprintf("must be a positive duration such as 10s, got %q", v))
		return def
	}
	return d
}

// minCooldown is the shortest cool-down of a circuit breaker: a shorter one would probe
// a provider that is down about as often as calls would.
const minCooldown = time.Second

// cooldown reads a circuit breaker's cool-down: a duration of at least minCooldown.
func (l *loader) cooldown(name string, def time.Duration) time.Duration {
	v, ok := l.lookup(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < minCooldown {
		l.fail(name, fmt.Sprintf("must be a duration of at least %s such as 30s, got %q", minCooldown, v))
		return def
	}
	return d
}

func (l *loader) origins(name string) []string {
	v, _ := l.lookup(name)
	var out []string
	for _, s := range splitList(v) {
		if s == "*" {
			out = append(out, s)
			continue
		}
		o, err := origin(s)
		if err != nil {
			l.fail(name, fmt.Sprintf("%q: %v", s, err))
			continue
		}
		out = append(out, o)
	}
	return out
}

func (l *loader) hosts(name string) []string {
	v, _ := l.lookup(name)
	var out []string
	for _, s := range splitList(v) {
		if strings.ContainsAny(s, "/:@") {
			l.fail(name, fmt.Sprintf("%q must be a host name without scheme or port, e.g. example.com", s))
			continue
		}
		out = append(out, strings.ToLower(s))
	}
	return out
}

func (l *loader) urls(name string) []string {
	v, _ := l.lookup(name)
	var out []string
	for _, s := range splitList(v) {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL may hold a secret token: name only its position.
			l.fail(name, fmt.Sprintf("entry %d is not an http(s) URL", len(out)+1))
			continue
		}
		out = append(out, s)
	}
	return out
}

func (l *loader) prefixes(name string) []netip.Prefix {
	v, _ := l.lookup(name)
	var out []netip.Prefix
	for _, s := range splitList(v) {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		} else {
			l.fail(name, fmt.Sprintf("%q is neither an IP address nor a CIDR range", s))
		}
	}
	return out
}

// fetchOptions reads true, false, or a list of the addresses and CIDR ranges allowed
// although not public.
func (l *loader) fetchOptions(name string) fetch.Options {
	v, _ := l.lookup(name)
	switch strings.ToLower(v) {
	case "", "false":
		return fetch.Options{}
	case "true":
		return fetch.Options{AllowPrivate: true}
	}
	n := len(l.errs)
	allow := l.prefixes(name)
	if len(l.errs) > n {
		l.errs = append(l.errs[:n], fmt.Errorf("%s must be true, false, or IP addresses and CIDR ranges such as 10.0.0.0/8, got %q", name, v))
	}
	return fetch.Options{Allow: allow}
}

func splitList(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
}

// origin returns the scheme://host[:port] of an absolute http(s) URL.
func origin(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("must be an absolute http(s) URL such as https://example.com")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}
