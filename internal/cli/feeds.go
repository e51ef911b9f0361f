package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/tools/appointments"
)

// newICSFeeds returns the busy-time calendar feeds, warmed once so that the first
// question after start-up need not wait for them.
func newICSFeeds(ctx context.Context, urls []string, fetchOpts fetch.Options, logger *slog.Logger) (*appointments.ICSFeeds, error) {
	feeds, err := appointments.NewICSFeeds(urls, appointments.ICSFeedOptions{Client: fetch.New(fetchOpts), Logger: logger})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := feeds.Refresh(ctx); err != nil {
		// Not fatal: the tool fails closed until a feed can be read.
		logger.Warn("a calendar feed could not be read at start-up", "err", err.Error())
	}
	return feeds, nil
}
