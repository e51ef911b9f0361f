package content

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// robotsNoIndex reports whether the directives of a robots meta element (or of a
// front matter "robots" key) keep the page out of an index: "noindex" or "none", in a
// comma-separated list, in any case ("NoIndex, follow").
func robotsNoIndex(directives string) bool {
	for d := range strings.SplitSeq(directives, ",") {
		switch strings.ToLower(strings.TrimSpace(d)) {
		case "noindex", "none":
			return true
		}
	}
	return false
}

// headerNoIndex reports whether a response's X-Robots-Tag headers keep the page out of
// an index. A value that names a crawler first ("googlebot: noindex") is for that
// crawler alone, and this index follows only the values for every crawler.
func headerNoIndex(h http.Header) bool {
	for _, v := range h.Values("X-Robots-Tag") {
		first, _, _ := strings.Cut(v, ",")
		if name, _, ok := strings.Cut(first, ":"); ok && !robotsValueDirective(name) {
			continue
		}
		if robotsNoIndex(v) {
			return true
		}
	}
	return false
}

// robotsValueDirective reports whether name, the text before a colon in an X-Robots-Tag
// value, is a directive that takes a value ("unavailable_after: 2030-01-01") rather than
// the name of a crawler.
func robotsValueDirective(name string) bool {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "unavailable_after", "max-snippet", "max-image-preview", "max-video-preview":
		return true
	}
	return false
}

// robots fetches and parses origin's robots.txt; nil allows everything.
func (c *Crawler) robots(ctx context.Context, origin string) *crawlRobots {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, origin+"/robots.txt", nil)
	if err != nil {
		return nil
	}
	req.Header.Set("User-Agent", c.userAgent())
	resp, err := c.client().Do(req)
	if err != nil {
		c.logger().Warn("ingest: robots.txt unavailable, allowing all", "origin", origin, "err", err)
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode >= 500 {
			c.logger().Warn("ingest: robots.txt unavailable, allowing all", "origin", origin, "status", resp.StatusCode)
		}
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, crawlRobotsMaxBytes))
	if err != nil {
		c.logger().Warn("ingest: robots.txt unreadable, allowing all", "origin", origin, "err", err)
		return nil
	}
	return crawlParseRobots(body, c.userAgent())
}

// crawlRobots holds the robots.txt rules that apply to one user agent.
type crawlRobots struct {
	rules []crawlRobotsRule
}

type crawlRobotsRule struct {
	allow  bool
	length int // of the pattern, for the longest-match rule
	re     *regexp.Regexp
}

// crawlParseRobots returns the rules of the groups naming userAgent's
// product token (the part before "/"), or else of the "*" groups.
func crawlParseRobots(body []byte, userAgent string) *crawlRobots {
	token, _, _ := strings.Cut(strings.ToLower(userAgent), "/")
	token = strings.TrimSpace(token)
	var (
		mine, star           []crawlRobotsRule
		agents               []string // of the group being read
		inRules              bool     // the group's rules have begun
		foundMine            bool
		groupMine, groupStar bool
	)
	for _, line := range bytes.Split(body, []byte("\n")) {
		s := string(line)
		if i := strings.IndexByte(s, '#'); i >= 0 {
			s = s[:i]
		}
		key, value, ok := strings.Cut(s, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		value = strings.TrimSpace(value)
		switch key {
		case "user-agent":
			if inRules {
				agents, inRules = nil, false
			}
			agents = append(agents, strings.ToLower(value))
			groupMine = slices.Contains(agents, token)
			groupStar = slices.Contains(agents, "*")
			foundMine = foundMine || groupMine
		case "allow", "disallow":
			inRules = true
			if value == "" {
				continue // "Disallow:" with no path allows everything
			}
			r := crawlRobotsRule{allow: key == "allow", length: len(value), re: crawlRobotsPattern(value)}
			if groupMine {
				mine = append(mine, r)
			}
			if groupStar {
				star = append(star, r)
			}
		}
	}
	if foundMine {
		return &crawlRobots{rules: mine}
	}
	return &crawlRobots{rules: star}
}

// crawlRobotsPattern compiles a robots.txt path pattern: a prefix, with "*"
// for any run of characters and a final "$" for the end of the path.
func crawlRobotsPattern(p string) *regexp.Regexp {
	anchored := strings.HasSuffix(p, "$")
	p = strings.TrimSuffix(p, "$")
	parts := strings.Split(p, "*")
	for i, part := range parts {
		parts[i] = regexp.QuoteMeta(part)
	}
	expr := "^" + strings.Join(parts, ".*")
	if anchored {
		expr += "$"
	}
	return regexp.MustCompile(expr)
}

// allowed reports whether the rules allow a path (escaped, as sent) and query.
func (r *crawlRobots) allowed(path, query string) bool {
	if path == "" {
		path = "/"
	}
	if query != "" {
		path += "?" + query
	}
	if path == "/robots.txt" {
		return true
	}
	best, allow := -1, true
	for _, rule := range r.rules {
		if !rule.re.MatchString(path) {
			continue
		}
		if rule.length > best || (rule.length == best && rule.allow) {
			best, allow = rule.length, rule.allow
		}
	}
	return allow
}
