package app

import (
	"crypto/sha256"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/insights"
)

// budgetOptions are the options of the daily budget of kind ("embedding", "llm") with
// limit tokens a day: its client share and pacing from the configuration, the clients'
// hashing secret, and fair-use events counted by counts.
func budgetOptions(cfg config.Config, kind string, limit int64, price float64, counts *fairUseCounts, logger *slog.Logger) budget.Options {
	share := cfg.FairUse.EmbeddingsShare
	if kind == "llm" {
		share = cfg.FairUse.LLMShare
	}
	return budget.Options{
		Kind: kind, Limit: limit, PricePerMTok: price, Logger: logger, Now: clock(),
		ClientShare: share.Of(limit), ClientSecret: clientSecret(cfg),
		Pacing: cfg.FairUse.Pacing, Burst: cfg.FairUse.Burst.Of(limit),
		OnFairUse: func(event string) { counts.add(event, kind) },
	}
}

// clientSecret keys the hash that names clients in the share rows. Every replica must
// have the same one for a client's share to hold across them: CLIENT_KEY_SECRET, else one
// derived from the admin tokens (the replicas of one deployment share those), else none
// (the budget makes one per process, and shares hold per replica).
func clientSecret(cfg config.Config) []byte {
	if s := cfg.FairUse.ClientKeySecret; s != "" {
		return []byte(s)
	}
	tokens := []string{cfg.AdminToken, cfg.AdminHookToken, cfg.AdminReportToken, cfg.AdminBookingsToken}
	if strings.Join(tokens, "") == "" {
		return nil
	}
	sum := sha256.Sum256([]byte("sitetools client key secret\x00" + strings.Join(tokens, "\x00")))
	return sum[:]
}

// fairUseCounts passes the budgets' fair-use events to the owner's counts, which are
// made after the budgets.
type fairUseCounts struct {
	mu  sync.Mutex
	rec *insights.Recorder
}

func (c *fairUseCounts) set(r *insights.Recorder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rec = r
}

func (c *fairUseCounts) add(event, kind string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	rec := c.rec
	c.mu.Unlock()
	switch event {
	case budget.EventShareReached:
		rec.FairUse(insights.FairUseShareReached, kind)
	case budget.EventPaced:
		rec.FairUse(insights.FairUsePaced, kind)
	}
}

// clockFileEnv names a file holding an RFC 3339 time that the budgets then take for now:
// a test hook, so that several serve processes live through one simulated day together.
// It is not a setting, and production never sets it.
const clockFileEnv = "SITETOOLS_TEST_CLOCK_FILE"

// clock is the budgets' clock: time.Now, or the time in the test clock file.
func clock() func() time.Time {
	path := os.Getenv(clockFileEnv)
	if path == "" {
		return time.Now
	}
	return func() time.Time {
		b, err := os.ReadFile(path)
		if err != nil {
			return time.Now()
		}
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b)))
		if err != nil {
			return time.Now()
		}
		return t
	}
}
