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

// pause is called after attempt (1-based) failed with err, already sanitized; after is
// the provider's Retry-After (0: none). It returns nil once it has waited for the next
// attempt. Otherwise it returns why to stop: ctx's error when ctx ended, err itself when
// retrying cannot help, or err wrapped in unavailable when the attempts ran out or the
// wait would pass ctx's deadline.
func (p retryPolicy) pause(ctx context.Context, attempt int, after time.Duration, err, unavailable error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if !retryable(err) {
		return err
	}
	if attempt > p.max {
		return fmt.Errorf("%w: giving up after %d attempts: %w", unavailable, attempt, err)
	}
	wait := after
	if wait <= 0 {
		wait = p.backoff(attempt)
	}
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
		return fmt.Errorf("%w: next attempt in %s would pass the deadline: %w", unavailable, wait, err)
	}
	p.log.LogAttrs(ctx, slog.LevelWarn, p.what+" failed, retrying",
		slog.String("model", p.model), slog.Int("attempt", attempt),
		slog.Duration("wait", wait), slog.String("error", err.Error()))
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
