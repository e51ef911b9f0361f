package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// canonicalArguments returns args as canonical JSON: {} for none, object keys sorted,
// duplicate keys resolved (the last wins, as in every decoder here), and integral numbers
// written as integers (1.0 and 1e2 are integers to JSON Schema, so they must be to a
// handler decoding into int too). Anything but a JSON object is refused.
func canonicalArguments(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	notObject := &Error{Code: CodeMalformedRequest, Message: "arguments must be a JSON object"}
	if trimmed[0] != '{' {
		return nil, notObject
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject
	}
	// Before the schema sees them: strings PostgreSQL cannot store, and numbers whose
	// exact arithmetic alone would cost more than a whole call.
	var details []Detail
	checkValues(v, "", &details)
	if len(details) > 0 {
		return nil, &Error{Code: CodeInvalidArguments, Message: invalidMessage(details), Details: details}
	}
	b, err := json.Marshal(normalizeNumbers(v))
	if err != nil {
		return nil, notObject
	}
	return b, nil
}

// The largest number an argument may spell: its characters, and its decimal exponent.
const (
	maxNumberChars    = 64
	maxNumberExponent = 400
)

// checkValues reports, with its JSON pointer, every string of v that holds U+0000 and
// every number longer than maxNumberChars or with an exponent beyond ±maxNumberExponent.
func checkValues(v any, pointer string, details *[]Detail) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.ContainsRune(k, 0) {
				*details = append(*details, Detail{Pointer: pointer, Message: "a property name contains the character U+0000 (NUL), which is not allowed"})
				continue
			}
			checkValues(e, pointer+"/"+escapePointer(k), details)
		}
	case []any:
		for i, e := range v {
			checkValues(e, pointer+"/"+strconv.Itoa(i), details)
		}
	case string:
		if strings.ContainsRune(v, 0) {
			*details = append(*details, Detail{Pointer: pointer, Message: "contains the character U+0000 (NUL), which is not allowed"})
		}
	case json.Number:
		if msg := numberProblem(string(v)); msg != "" {
			*details = append(*details, Detail{Pointer: pointer, Message: msg})
		}
	}
}

func numberProblem(n string) string {
	if len(n) > maxNumberChars {
		return fmt.Sprintf("a number of %d characters; at most %d are allowed", len(n), maxNumberChars)
	}
	if i := strings.IndexAny(n, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
		if err != nil || exp > maxNumberExponent || exp < -maxNumberExponent {
			return fmt.Sprintf("the exponent of %s is beyond ±%d", Truncate(n, 32), maxNumberExponent)
		}
	}
	return ""
}

// escapePointer escapes a property name for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func normalizeNumbers(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeNumbers(e)
		}
	case json.Number:
		if !strings.ContainsAny(string(v), ".eE") {
			return v
		}
		f, _, err := big.ParseFloat(string(v), 10, 256, big.ToNearestEven)
		if err != nil || !f.IsInt() {
			return v
		}
		if i, acc := f.Int64(); acc == big.Exact {
			return json.Number(strconv.FormatInt(i, 10))
		}
	}
	return v
}

func invalidMessage(details []Detail) string {
	if len(details) == 1 {
		return "invalid arguments: " + describe(details[0])
	}
	return fmt.Sprintf("invalid arguments: %d problems, first: %s", len(details), describe(details[0]))
}

func describe(d Detail) string {
	if d.Pointer == "" {
		return d.Message
	}
	return d.Pointer + ": " + d.Message
}

// Truncate cuts s to at most n bytes, at a character boundary, marking a cut with "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
