package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sitetools/sitetools/internal/config"

	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/appointments"
)

// newAvailability returns get_free_slots for the configured schedule, or nil when no
// schedule is configured.
func newAvailability(ctx context.Context, cfg config.Config, db *postgres.DB, logger *slog.Logger) (*appointments.Availability, func(), error) {
	if cfg.AvailabilityConfig == "" {
		return nil, func() {}, nil
	}
	f, err := os.Open(cfg.AvailabilityConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("AVAILABILITY_CONFIG: %w", err)
	}
	defer f.Close()
	sched, err := appointments.LoadSchedule(f)
	if err != nil {
		return nil, nil, fmt.Errorf("AVAILABILITY_CONFIG %s:\n  %s", cfg.AvailabilityConfig, strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	sources := []appointments.BusySource{postgres.NewBookings(db)}
	closeFeeds := func() {}
	if len(cfg.AvailabilityICSURLs) > 0 {
		feeds, err := newICSFeeds(ctx, cfg.AvailabilityICSURLs, cfg.Fetch, logger)
		if err != nil {
			return nil, nil, fmt.Errorf("AVAILABILITY_ICS_URLS: %w", err)
		}
		sources = append(sources, feeds)
		closeFeeds = feeds.Close
	}
	return &appointments.Availability{Schedule: sched, Sources: sources}, closeFeeds, nil
}

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
