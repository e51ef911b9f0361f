package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Share is an amount of a daily token budget: a number of tokens, or a percentage of the
// day's limit. The zero Share is none (no cap).
type Share struct {
	Tokens  int64   // a fixed number of tokens; 0 with Percent 0: none
	Percent float64 // a percentage of the day's limit (0 < Percent <= 100)
}

// Of is the share in tokens of a daily limit (0: unlimited); 0 means no cap: a
// percentage of an unlimited budget caps nothing.
func (s Share) Of(limit int64) int64 {
	if s.Tokens > 0 {
		return s.Tokens
	}
	if s.Percent <= 0 || limit <= 0 {
		return 0
	}
	return max(int64(float64(limit)*s.Percent/100), 1)
}

// String writes the share as it is configured: "1500" or "5%".
func (s Share) String() string {
	if s.Tokens > 0 {
		return strconv.FormatInt(s.Tokens, 10)
	}
	if s.Percent > 0 {
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	return "0"
}

// FairUse keeps one visitor, or many, from spending everyone's day: a share of each paid
// budget per client and per day, the day's budgets released over the day (pacing), and
// an optional proof of work before a chat turn.
type FairUse struct {
	// LLMShare and EmbeddingsShare are what one client (one address, one IPv6 /64) may
	// spend of each daily budget (LLM_CLIENT_DAILY_SHARE, EMBEDDINGS_CLIENT_DAILY_SHARE).
	LLMShare, EmbeddingsShare Share
	// Pacing releases each daily budget over the day (BUDGET_PACING): Burst at midnight
	// UTC and the rest linearly, so that the whole day is reachable only at its end.
	Pacing bool
	Burst  Share // BUDGET_PACING_BURST
	// ClientKeySecret keys the hash of client addresses in the share rows
	// (CLIENT_KEY_SECRET); empty: derived from the admin token, else random per process.
	ClientKeySecret string
	// ProofOfWork is when a chat turn needs a solved challenge (CHAT_PROOF_OF_WORK):
	// "off", "pressure" (while the paced LLM budget runs short) or "always".
	ProofOfWork string
	// ProofOfWorkMaxNumber is the challenge's difficulty (the largest number a solver may
	// have to try; it tries half as many on average); ProofOfWorkExpiry its lifetime.
	ProofOfWorkMaxNumber int
	ProofOfWorkExpiry    time.Duration
}

// The fair-use defaults (documented in the README and docs/operations.md).
const (
	DefaultClientShare           = 5  // percent of each day's budget per client
	DefaultPacingBurst           = 10 // percent of each day's budget free at midnight
	DefaultProofOfWorkMaxNumber  = 100_000
	DefaultProofOfWorkExpiry     = 5 * time.Minute
	minClientKeySecret           = 32
	maxProofOfWorkMaxNumber      = 10_000_000
	minProofOfWorkMaxNumber      = 1000
	defaultProofOfWorkModeString = "off"
)

// AreaFairUse is LLM_CLIENT_DAILY_SHARE, EMBEDDINGS_CLIENT_DAILY_SHARE, BUDGET_PACING*,
// CLIENT_KEY_SECRET and CHAT_PROOF_OF_WORK*.
func (f *FairUse) load(l *loader) {
	*f = FairUse{
		LLMShare:             l.share("LLM_CLIENT_DAILY_SHARE", Share{Percent: DefaultClientShare}),
		EmbeddingsShare:      l.share("EMBEDDINGS_CLIENT_DAILY_SHARE", Share{Percent: DefaultClientShare}),
		Burst:                l.share("BUDGET_PACING_BURST", Share{Percent: DefaultPacingBurst}),
		ClientKeySecret:      l.str("CLIENT_KEY_SECRET", ""),
		ProofOfWork:          l.str("CHAT_PROOF_OF_WORK", defaultProofOfWorkModeString),
		ProofOfWorkMaxNumber: l.integer("CHAT_PROOF_OF_WORK_MAX_NUMBER", DefaultProofOfWorkMaxNumber, minProofOfWorkMaxNumber, maxProofOfWorkMaxNumber),
		ProofOfWorkExpiry:    l.duration("CHAT_PROOF_OF_WORK_EXPIRY", DefaultProofOfWorkExpiry),
	}
	switch v := l.str("BUDGET_PACING", "on"); v {
	case "on":
		f.Pacing = true
	case "off":
	default:
		l.fail("BUDGET_PACING", fmt.Sprintf("must be on or off, got %q", v))
	}
	switch f.ProofOfWork {
	case "off", "pressure", "always":
	default:
		l.fail("CHAT_PROOF_OF_WORK", fmt.Sprintf("must be off, pressure or always, got %q", f.ProofOfWork))
		f.ProofOfWork = defaultProofOfWorkModeString
	}
	if s := f.ClientKeySecret; s != "" && len(s) < minClientKeySecret {
		l.fail("CLIENT_KEY_SECRET", fmt.Sprintf("must be at least %d characters (e.g. openssl rand -hex 32)", minClientKeySecret))
	}
	if f.ProofOfWorkExpiry < 10*time.Second || f.ProofOfWorkExpiry > time.Hour {
		l.fail("CHAT_PROOF_OF_WORK_EXPIRY", "must be a duration from 10s to 1h such as 5m")
		f.ProofOfWorkExpiry = DefaultProofOfWorkExpiry
	}
}

// share reads a Share: a whole number of tokens, or a percentage such as "5%"; "0"
// (or "0%") is none.
func (l *loader) share(name string, def Share) Share {
	v, ok := l.lookup(name)
	if !ok || v == "" {
		return def
	}
	v = strings.TrimSpace(v)
	if p, isPct := strings.CutSuffix(v, "%"); isPct {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f < 0 || f > 100 {
			l.fail(name, fmt.Sprintf("must be a number of tokens or a percentage from 0%% to 100%% such as 5%%, got %q", v))
			return def
		}
		return Share{Percent: f}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		l.fail(name, fmt.Sprintf("must be a number of tokens or a percentage from 0%% to 100%% such as 5%%, got %q", v))
		return def
	}
	return Share{Tokens: n}
}
