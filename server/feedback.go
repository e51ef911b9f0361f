package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/tools"
)

// CodeUnknownAnswer is feedback or a hand-over naming an answer id this site did not
// issue, or issued more than seven days ago.
const CodeUnknownAnswer = "unknown_answer"

// feedbackBodyLimit bounds the body of POST /api/feedback and /api/handover: their
// fields are a few words.
const feedbackBodyLimit = 1 << 10

// feedback handles POST /api/feedback: a visitor's rating of a chat answer,
// {"answerId", "kind", "rating": "up"|"down", "reason"}, the reason optional and only with
// "down". It is counted per day, kind, rating and reason, once per answer on every
// replica; nothing else is kept, not the id (only its hash, for a week, to know it again).
//
// A replay gets what the first request got, 204, and counts nothing: a double click, a
// retry after a lost response and a replayed id all look alike, and a client should not
// have to tell them apart. Another rating of the same answer is also 204 and replaces the
// first (the count moves, see insights.Recorder.Rate): the owner learns what the visitor
// finally thought, and no sequence of requests counts one answer twice.
func (a *App) feedback(c echo.Context) error {
	var body struct {
		AnswerID *string `json:"answerId"`
		Kind     *string `json:"kind"`
		Rating   *string `json:"rating"`
		Reason   *string `json:"reason"`
	}
	const shape = `{"answerId": "<message.done's answerId>", "kind": "model|retrieval|degraded", "rating": "up|down", "reason": "wrong|outdated|unanswered|other"}`
	if err := a.readSmallJSON(c, &body, shape); err != nil {
		return err
	}
	var details []tools.Detail
	need := func(field string, v *string, allowed []string) {
		switch {
		case v == nil:
			details = append(details, tools.Detail{Pointer: "/" + field, Message: "is required"})
		case allowed != nil && !slices.Contains(allowed, *v):
			details = append(details, tools.Detail{Pointer: "/" + field, Message: "must be one of " + quoteList(allowed)})
		}
	}
	need("answerId", body.AnswerID, nil)
	need("kind", body.Kind, insights.Kinds)
	need("rating", body.Rating, insights.Ratings)
	reason := insights.ReasonNone
	if body.Reason != nil {
		need("reason", body.Reason, insights.Reasons)
		if body.Rating != nil && *body.Rating == "up" {
			details = append(details, tools.Detail{Pointer: "/reason", Message: `is only given with "rating": "down"`})
		}
		reason = *body.Reason
	}
	if len(details) > 0 {
		return &tools.Error{Code: tools.CodeMalformedRequest, Message: "the feedback does not have the shape " + shape, Details: details}
	}
	if err := a.allow(c); err != nil {
		return err
	}
	unavailable := func(err error) error {
		return &tools.Error{Code: tools.CodeUnavailable, Message: "feedback cannot be taken right now; try again later", RetryAfter: 5 * time.Second, Err: err}
	}
	// Once received, a rating is counted even if its client hangs up meanwhile: its retry
	// is then a replay, which counts nothing.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 5*time.Second)
	defer cancel()
	kind, err := a.answerIDs.Check(ctx, *body.AnswerID)
	switch {
	case errors.Is(err, insights.ErrUnknownAnswer):
		return tools.Errorf(CodeUnknownAnswer, "answerId is not the id of an answer of this site, or the answer is more than 7 days old")
	case err != nil:
		return unavailable(err)
	case kind != *body.Kind:
		return &tools.Error{Code: tools.CodeMalformedRequest, Message: "kind is not the kind of the answer answerId names",
			Details: []tools.Detail{{Pointer: "/kind", Message: "must be " + strconv.Quote(kind)}}}
	}
	if _, err := a.insights.Rate(ctx, *body.AnswerID, kind, *body.Rating, reason); err != nil {
		if tools.AsError(err).Code == tools.CodeUnavailable {
			return unavailable(err)
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// handover handles POST /api/handover: {"tool": "prefill_contact_form", "answerId": "…"},
// sent by the WebMCP bridge after the browser tool filled in the contact form. Counted
// per day; the form's contents never leave the tab. 204.
//
// A hand-over counts once, on every replica. With answerId (message.done's, from a
// caller that ran the tool in a turn of the site's chat) once per answer: an id this site
// did not sign is 404 unknown_answer, as for a rating. Without one (the bridge's: it runs
// the tool for a visitor's own assistant, and no answer of this site precedes it) once
// per visitor and UTC day, the visitor being the rate limit's key, stored only as its
// keyed hash of the day (see handoverKey). A replay gets what the first request got,
// 204, and counts nothing.
func (a *App) handover(c echo.Context) error {
	var body struct {
		Tool     *string `json:"tool"`
		AnswerID *string `json:"answerId"`
	}
	const shape = `{"tool": "prefill_contact_form", "answerId": "<message.done's answerId, if any>"}`
	if err := a.readSmallJSON(c, &body, shape); err != nil {
		return err
	}
	if body.Tool == nil || *body.Tool != "prefill_contact_form" {
		return &tools.Error{Code: tools.CodeMalformedRequest, Message: "the hand-over does not have the shape " + shape,
			Details: []tools.Detail{{Pointer: "/tool", Message: `must be "prefill_contact_form"`}}}
	}
	if err := a.allow(c); err != nil {
		return err
	}
	unavailable := func(err error) error {
		return &tools.Error{Code: tools.CodeUnavailable, Message: "the hand-over cannot be counted right now; try again later", RetryAfter: 5 * time.Second, Err: err}
	}
	// Once received, a hand-over is counted even if its client hangs up meanwhile (the
	// bridge's request outlives the page): its retry is then a replay.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 5*time.Second)
	defer cancel()
	key, err := a.handoverKey(ctx, c, body.AnswerID)
	switch {
	case errors.Is(err, insights.ErrUnknownAnswer):
		return tools.Errorf(CodeUnknownAnswer, "answerId is not the id of an answer of this site, or the answer is more than 7 days old")
	case err != nil:
		return unavailable(err)
	}
	if _, err := a.insights.Handover(ctx, *body.Tool, key); err != nil {
		if tools.AsError(err).Code == tools.CodeUnavailable {
			return unavailable(err)
		}
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// handoverPurpose names visitors in counted_handovers: not as the budgets' shares do, so
// that the rows of the two tables do not match.
const handoverPurpose = "sitetools hand-over"

// handoverKey is what a hand-over counts once under: the SHA-256 of answerID (32 bytes)
// once it is checked, or without one the visitor's name of the day (16 bytes), a keyed
// hash of the rate limit's key whose secret is not in the database.
func (a *App) handoverKey(ctx context.Context, c echo.Context, answerID *string) ([]byte, error) {
	if answerID == nil {
		return a.clientKeys.Key(handoverPurpose, time.Now(), a.edge.bucket(c.RealIP())), nil
	}
	if _, err := a.answerIDs.Check(ctx, *answerID); err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(*answerID))
	return sum[:], nil
}

// readSmallJSON reads a JSON object of known, exactly spelled string fields into v.
func (a *App) readSmallJSON(c echo.Context, v any, shape string) error {
	req := c.Request()
	if !isJSON(req.Header.Get("Content-Type")) {
		return tools.Errorf(CodeUnsupportedMediaType, "send the request body as application/json")
	}
	body, err := readBody(req, feedbackBodyLimit)
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) || len(trimmed) == 0 || trimmed[0] != '{' {
		return tools.Errorf(tools.CodeMalformedRequest, "request body must be the JSON object %s", shape)
	}
	if field, ok := exactFields(trimmed, v); !ok {
		return tools.Errorf(tools.CodeMalformedRequest, "unknown field %q: send %s", tools.Truncate(field, 64), shape)
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return &tools.Error{Code: tools.CodeMalformedRequest, Message: "request body must be the JSON object " + shape,
				Details: []tools.Detail{{Pointer: "/" + tools.Truncate(typeErr.Field, 64), Message: "must be a string"}}}
		}
		return tools.Errorf(tools.CodeMalformedRequest, "request body must be the JSON object %s", shape)
	}
	if _, err := dec.Token(); err != io.EOF {
		return tools.Errorf(tools.CodeMalformedRequest, "request body has data after the JSON object")
	}
	return nil
}

// exactFields returns the first member of the object body that is not spelled exactly as
// one of v's json tags (encoding/json alone would accept "RATING").
func exactFields(body []byte, v any) (string, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return "", true
	}
	b, _ := json.Marshal(v) // pointers that are nil: every field by its tag, as null
	var known map[string]json.RawMessage
	_ = json.Unmarshal(b, &known)
	for k := range top {
		if _, ok := known[k]; !ok {
			return k, false
		}
	}
	return "", true
}

// allow applies the per-client rate limit of tool calls and chat turns.
func (a *App) allow(c echo.Context) error {
	if ok, wait := a.limiter.Allow(c.RealIP()); !ok {
		return &tools.Error{Code: tools.CodeRateLimited, Message: "too many requests; retry after the time in Retry-After",
			RetryAfter: max(wait, time.Second)}
	}
	return nil
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return joinOr(q)
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, v := range s[1 : len(s)-1] {
		out += ", " + v
	}
	return out + " or " + s[len(s)-1]
}
