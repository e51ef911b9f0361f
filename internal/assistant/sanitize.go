package assistant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// SanitizeOptions bound what one tool result may put in front of the model. Zero
// values mean the defaults given per field.
type SanitizeOptions struct {
	MaxStringChars int // characters of one string (default 2000)
	MaxItems       int // elements of one array, fields of one object (default 50)
	MaxDepth       int // nesting (default 12)
	MaxBytes       int // the whole result, serialised (default 16 KiB)
}

func (o SanitizeOptions) withDefaults() SanitizeOptions {
	orDefault(&o.MaxStringChars, 2000)
	orDefault(&o.MaxItems, 50)
	orDefault(&o.MaxDepth, 12)
	orDefault(&o.MaxBytes, 16<<10)
	return o
}

// orDefault sets an option that is not positive, so unset, to its default.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Sanitize returns v, any JSON-serialisable value, as JSON fit to show a model: long
// strings are cut with a marker ("…[truncated 12345 chars]"), strings that are base64,
// hex or binary are replaced by a summary ("[binary data omitted: 2.0 MB base64]"),
// arrays and objects keep their first elements and a marker for the rest, deep nesting
// is summarised, and the whole stays within MaxBytes, shrinking the limits further if
// it must. It changes how a result is presented, never what it says: nothing is
// rewritten, only left out with a marker saying so.
func Sanitize(v any, opts SanitizeOptions) json.RawMessage {
	o := opts.withDefaults()
	value, err := decodeValue(v)
	if err != nil {
		return json.RawMessage(`"[result omitted: not serialisable]"`)
	}
	var out []byte
	for {
		out = mustMarshal(sanitizeValue(value, o, 0))
		if len(out) <= o.MaxBytes || (o.MaxStringChars <= 64 && o.MaxItems <= 4) {
			break
		}
		o.MaxStringChars = max(64, o.MaxStringChars/2)
		o.MaxItems = max(4, o.MaxItems/2)
	}
	if len(out) <= o.MaxBytes {
		return out
	}
	// Still too big (very many small fields at every level): show the start as text.
	text := string(out)
	for n := o.MaxBytes / 2; n > 16; n /= 2 {
		cut := cutRunes(text, n)
		wrapped := mustMarshal(map[string]string{"truncated": cut + fmt.Sprintf("…[truncated %d chars]", utf8.RuneCountInString(text)-utf8.RuneCountInString(cut))})
		if len(wrapped) <= o.MaxBytes {
			return wrapped
		}
	}
	return json.RawMessage(`"[result omitted: too large]"`)
}

// decodeValue turns v into the generic JSON form (maps, slices, json.Number).
func decodeValue(v any) (any, error) {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings, numbers, bools, maps and slices reach here.
		panic(fmt.Sprintf("assistant.Sanitize: %v", err))
	}
	return b
}

func sanitizeValue(v any, o SanitizeOptions, depth int) any {
	switch x := v.(type) {
	case string:
		return sanitizeString(x, o.MaxStringChars)
	case []any:
		if depth >= o.MaxDepth {
			return fmt.Sprintf("[nested data omitted: a list of %d items]", len(x))
		}
		n := min(len(x), o.MaxItems)
		out := make([]any, 0, n+1)
		for _, e := range x[:n] {
			out = append(out, sanitizeValue(e, o, depth+1))
		}
		if len(x) > n {
			out = append(out, fmt.Sprintf("…[%d more items omitted]", len(x)-n))
		}
		return out
	case map[string]any:
		if depth >= o.MaxDepth {
			return fmt.Sprintf("[nested data omitted: an object of %d fields]", len(x))
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		n := min(len(keys), o.MaxItems)
		out := make(map[string]any, n+1)
		for _, k := range keys[:n] {
			out[cutRunes(k, 200)] = sanitizeValue(x[k], o, depth+1)
		}
		if len(keys) > n {
			// "…" sorts after every ASCII key, so the marker comes last.
			out["…"] = fmt.Sprintf("[%d more fields omitted]", len(keys)-n)
		}
		return out
	}
	return v // numbers, booleans, null
}

// minBinaryLen is the shortest string that may be summarised as binary data: shorter
// ones (hashes, ids) are shown as they are.
const minBinaryLen = 256

func sanitizeString(s string, maxChars int) string {
	if len(s) >= minBinaryLen {
		if kind := binaryKind(s); kind != "" {
			return fmt.Sprintf("[binary data omitted: %s %s]", humanSize(len(s)), kind)
		}
	}
	if n := utf8.RuneCountInString(s); n > maxChars {
		return cutRunes(s, maxChars) + fmt.Sprintf("…[truncated %d chars]", n-maxChars)
	}
	return s
}

// binaryKind reports whether s is an encoded or raw binary payload rather than text:
// "base64", "hex", "binary", or "" for text.
func binaryKind(s string) string {
	if rest, ok := strings.CutPrefix(s, "data:"); ok {
		// A data: URI: name its media type and judge its payload.
		if i := strings.Index(rest[:min(len(rest), 200)], ";base64,"); i >= 0 {
			media := rest[:i]
			if binaryKind(rest[i+len(";base64,"):]) == "base64" && !strings.ContainsAny(media, " \"<>") {
				return strings.TrimSpace("base64 " + media)
			}
		}
		return ""
	}
	var upper, lower, digit, b64, hex, control, other, ws int
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			control++
		case 'A' <= r && r <= 'Z':
			upper++
			if r <= 'F' {
				hex++
			}
		case 'a' <= r && r <= 'z':
			lower++
			if r <= 'f' {
				hex++
			}
		case '0' <= r && r <= '9':
			digit++
			hex++
		case r == '+' || r == '/' || r == '=' || r == '-' || r == '_':
			b64++
		case r == '\n' || r == '\r':
			ws++ // MIME base64 breaks lines
		case r < 0x20 || r == 0x7f:
			control++
		default:
			other++
		}
	}
	total := upper + lower + digit + b64 + ws + control + other
	switch {
	case control*100 > total: // more than 1% control characters or invalid UTF-8
		return "binary"
	case other > 0 || ws*20 > total:
		return "" // text: spaces, punctuation or letters beyond ASCII
	case hex == total-ws && digit > 0 && upper+lower > 0:
		return "hex"
	case upper > 0 && lower > 0 && digit > 0:
		// Base64 of data mixes cases and digits; a long run of one letter or a word does not.
		return "base64"
	}
	return ""
}

func humanSize(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
}

// cutRunes returns the first n characters of s.
func cutRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
