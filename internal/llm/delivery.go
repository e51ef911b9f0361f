package llm

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Delivery counts what became of the requests of one provider call (embeddings or chat),
// for the cost guard. Every request the OpenAI embeddings client and the Chat client
// make under a context from Track counts once, retries and the pieces of split batches
// included: as not sent (not counted at all), or as sent and then exactly one of
// unknown, refused or answered, so that Sent() == Unknown() + Refused() + Answered().
//
// A request counts as sent once the transport has written its headers to a connection
// (net/http/httptrace's WroteHeaders), or when an answer to it arrived. A connection
// refused, a DNS failure, a failed TLS handshake or a request cancelled while it was
// still connecting never left, and is not counted. A custom OpenAIOptions.HTTPClient or
// ChatOptions.HTTPClient must use a transport that reports to httptrace, as the standard
// one does; otherwise a request that gets no answer is taken for one never sent.
//
// For the embeddings requests it also keeps what their tokens were: what the provider
// reported for the answered ones (AnsweredTokens), and sitetools' estimate for each one
// whose delivery is unknown (UnknownEstimates), so that a caller can charge a call that
// failed, or that succeeded only after a split or a retry, for every request in it.
//
// A Delivery is safe for concurrent use; a nil *Delivery counts nothing and reads 0.
type Delivery struct {
	parent *Delivery // the Delivery of an enclosing Track, which counts the same requests

	mu                               sync.Mutex
	sent, unknown, refused, answered int
	answeredTokens                   int
	unknownEstimates                 []int
}

type deliveryKey struct{}

// Track returns ctx carrying a new Delivery that the OpenAI embeddings client and the
// Chat client fill for every request they make under it. A Track under a tracked
// context starts a Delivery of its own whose requests the enclosing one counts too.
func Track(ctx context.Context) (context.Context, *Delivery) {
	d := &Delivery{}
	d.parent, _ = ctx.Value(deliveryKey{}).(*Delivery)
	return context.WithValue(ctx, deliveryKey{}, d), d
}

// Sent is how many requests were written to a connection, or answered: the provider may
// have received them.
func (d *Delivery) Sent() int { return d.read(func(d *Delivery) int { return d.sent }) }

// Unknown is how many of the sent requests got no answer that settles them: timed out or
// cancelled after being written, a connection reset or closed after the write, a 5xx
// answer, or a chat stream that broke or was stopped before its end. The provider may
// bill them.
func (d *Delivery) Unknown() int { return d.read(func(d *Delivery) int { return d.unknown }) }

// Refused is how many of the sent requests were answered with a 4xx, 429 included: not
// served, and providers do not bill them.
func (d *Delivery) Refused() int { return d.read(func(d *Delivery) int { return d.refused }) }

// Answered is how many of the sent requests were answered successfully: an embeddings
// answer, or a chat stream read to its end.
func (d *Delivery) Answered() int { return d.read(func(d *Delivery) int { return d.answered }) }

// AnsweredTokens is what the provider reported for the answered embeddings requests:
// the prompt tokens of their usage, or CountTokens over the inputs of an answer that
// reported none. Chat requests add nothing.
func (d *Delivery) AnsweredTokens() int {
	return d.read(func(d *Delivery) int { return d.answeredTokens })
}

// UnknownEstimates holds one entry for each of the Unknown requests, in the order they
// ended: for an embeddings request, CountTokens over the inputs it carried (what the
// provider received, before its own tokenizer counts it); for a chat request, 0.
func (d *Delivery) UnknownEstimates() []int {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.unknownEstimates...)
}

func (d *Delivery) read(field func(*Delivery) int) int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return field(d)
}

// outcome is what became of one request.
type outcome int

const (
	notSent outcome = iota
	unknown
	refused
	answered
)

// outcomeOf classifies a request that ended with err (nil: success) given what the HTTP
// layer saw of it.
func outcomeOf(a *attemptInfo, err error) outcome {
	switch {
	case err == nil:
		return answered
	case a.status >= http.StatusBadRequest && a.status < http.StatusInternalServerError:
		return refused
	case a.sent():
		return unknown
	}
	return notSent
}

// add counts one request's outcome here and in the enclosing Deliveries; tokens are the
// provider's report of an answered request, the estimate of an unknown one.
func (d *Delivery) add(o outcome, tokens int) {
	if o == notSent {
		return
	}
	for ; d != nil; d = d.parent {
		d.mu.Lock()
		d.sent++
		switch o {
		case unknown:
			d.unknown++
			d.unknownEstimates = append(d.unknownEstimates, tokens)
		case refused:
			d.refused++
		case answered:
			d.answered++
			d.answeredTokens += tokens
		}
		d.mu.Unlock()
	}
}

// call follows one Embed or Stream call across its requests: it counts them in the
// context's Delivery, asks the context's attempt hook before the extra ones, and keeps
// the provider's last Retry-After for the call's error.
type call struct {
	delivery *Delivery   // nil: untracked
	hook     attemptHook // nil: none
	after    time.Duration
}

func newCall(ctx context.Context) *call {
	c := &call{}
	c.delivery, _ = ctx.Value(deliveryKey{}).(*Delivery)
	c.hook, _ = ctx.Value(attemptHookKey{}).(attemptHook)
	return c
}

// attempt returns the attemptInfo for the call's next request.
func (c *call) attempt() *attemptInfo { return &attemptInfo{observe: c.delivery != nil} }

// settle records how a request ended: err is its error (nil: success).
func (c *call) settle(a *attemptInfo, err error) {
	if a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable {
		c.after = a.after
	}
	o := outcomeOf(a, err)
	tokens := 0
	switch {
	case o == answered:
		tokens = a.tokens
	case o == unknown && c.delivery != nil:
		for _, in := range a.inputs {
			tokens += CountTokens(in)
		}
	}
	c.delivery.add(o, tokens)
}

// streamEnded records how the body of a chat stream, whose request was answered 200,
// ended: err is why it stopped early, nil when it was read to its end.
func (c *call) streamEnded(err error) {
	if err != nil {
		c.delivery.add(unknown, 0)
		return
	}
	c.delivery.add(answered, 0)
}

// admit asks the hook whether the call may send another request, its attempt-th for the
// same inputs; last is why the one before failed (nil: not known). It returns nil
// without a hook.
func (c *call) admit(ctx context.Context, attempt int, last error) error {
	if c.hook == nil {
		return nil
	}
	if err := c.hook(ctx, attempt); err != nil {
		return &attemptRefused{err: err, attempt: attempt, last: last}
	}
	return nil
}

// finish is the call's error, carrying the provider's last Retry-After.
func (c *call) finish(err error) error {
	if err == nil || c.after <= 0 {
		return err
	}
	return &retryAfterError{err: err, after: c.after}
}
