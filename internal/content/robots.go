package content

import (
	"net/http"
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
