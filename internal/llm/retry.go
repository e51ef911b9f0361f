package llm

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// retryPolicy is how the embeddings and the chat client retry a failed request.
type retryPolicy struct {
	max     int                             // retries after the first attempt
	backoff func(attempt int) time.Duration // the wait when the provider names none
	log     *slog.Logger
	what    string // "embedding request", "chat request"
	model   string
}

// next is called after attempt (1-based) failed with err, already sanitized; after is
// the provider's Retry-After (0: none). It returns the wait before the next attempt, or
// why to stop: ctx's error when ctx ended, err itself when retrying cannot help, or err
// wrapped in unavailable when the attempts ran out or the wait would pass ctx's deadline.
func (p retryPolicy) next(ctx context.Context, attempt int, after time.Duration, err, unavailable error) (time.Duration, error) {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return 0, ctxErr
	}
	if !retryable(err) {
		return 0, err
	}
	if attempt > p.max {
		return 0, fmt.Errorf("%w: giving up after %d attempts: %w", unavailable, attempt, err)
	}
	wait := after
	if wait <= 0 {
		wait = p.backoff(attempt)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return 0, fmt.Errorf("%w: next attempt in %s would pass the deadline: %w", unavailable, wait, err)
	}
	return wait, nil
}

// wait logs that attempt failed with err and is retried, and waits for d. It returns
// nil once it has waited, or ctx's error when ctx ends first.
func (p retryPolicy) wait(ctx context.Context, attempt int, d time.Duration, err error) error {
	p.log.LogAttrs(ctx, slog.LevelWarn, p.what+" failed, retrying",
		slog.String("model", p.model), slog.Int("attempt", attempt),
		slog.Duration("wait", d), slog.String("error", err.Error()))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
