package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/altcha"
	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
)

// proofOfWorkHeader carries a chat turn's solved challenge, ALTCHA's base64 JSON. A
// header rather than a member of the body: the body is the conversation, checked
// strictly, and the solution is not part of it.
const proofOfWorkHeader = "Altcha"

// proofOfWorkKey names the challenges' signing key in instance_keys (migration 00015).
const proofOfWorkKey = "proof_of_work"

// The modes of CHAT_PROOF_OF_WORK.
const (
	proofOfWorkAlways   = "always"
	proofOfWorkPressure = "pressure"
)

// proofOfWork is the optional puzzle before a chat turn (CHAT_PROOF_OF_WORK): a
// challenge signed with a key every replica reads from the database, and the record of
// spent challenges there, so that a solution buys one turn on any replica. It keeps no
// state of its own but the key.
type proofOfWork struct {
	db  *postgres.DB
	now func() time.Time

	mu  sync.Mutex
	key *altcha.Key // read from the database on first use: it may be down at start-up
}

func newProofOfWork(db *postgres.DB) *proofOfWork {
	return &proofOfWork{db: db, now: time.Now}
}

func (p *proofOfWork) signingKey(ctx context.Context) (*altcha.Key, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.key != nil {
		return p.key, nil
	}
	secret, err := p.db.InstanceKey(ctx, proofOfWorkKey)
	if err != nil {
		return nil, err
	}
	if p.key, err = altcha.NewKey(secret); err != nil {
		return nil, err
	}
	return p.key, nil
}

// proofRequired says whether a chat turn needs a solved challenge now: always, or while
// the paced LLM budget runs short, or never (CHAT_PROOF_OF_WORK).
func (a *App) proofRequired() bool {
	switch a.cfg.FairUse.ProofOfWork {
	case proofOfWorkAlways:
		return true
	case proofOfWorkPressure:
		return a.pressure()
	}
	return false
}

// challengeBody is GET /api/chat/challenge's answer: {"required": false}, or the
// challenge's members beside "required": true, as ALTCHA clients read them.
type challengeBody struct {
	Required bool `json:"required"`
	*altcha.Challenge
}

// chatChallenge handles GET /api/chat/challenge: whether a chat turn needs a proof of
// work right now and, when it does, a new challenge for it (see package altcha), valid
// for CHAT_PROOF_OF_WORK_EXPIRY and for one turn. Never cached: each answer is for one
// turn, and whether one is needed may change by the minute.
func (a *App) chatChallenge(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "no-store")
	if !a.proofRequired() {
		return c.JSON(http.StatusOK, challengeBody{})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	key, err := a.pow.signingKey(ctx)
	if err != nil {
		return err
	}
	fu := a.cfg.FairUse
	ch, err := key.Create(fu.ProofOfWorkMaxNumber, a.pow.now().Add(fu.ProofOfWorkExpiry))
	if err != nil {
		return err
	}
	a.insights.FairUse(insights.FairUseProofOfWork, "issued")
	return c.JSON(http.StatusOK, challengeBody{Required: true, Challenge: &ch})
}

// checkProofOfWork is the chat's one check of the proof of work: when one is required, a
// turn without a solution in the Altcha header is refused with proof_of_work_required,
// and one whose solution is forged, expired or was used before (on any replica) with
// proof_of_work_invalid, saying which; a valid solution is spent. Each outcome is counted
// for the owner's report. chatTurn calls it before the stream starts and before any
// provider call.
func (a *App) checkProofOfWork(ctx context.Context, payload string) error {
	if !a.proofRequired() {
		return nil
	}
	count := func(outcome string) { a.insights.FairUse(insights.FairUseProofOfWork, outcome) }
	if payload == "" {
		count("missing")
		return tools.Errorf(CodeProofOfWorkRequired, "this chat asks for a proof of work before each turn right now: GET /api/chat/challenge, solve the challenge and send the turn again with the solution in the Altcha header")
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	key, err := a.pow.signingKey(ctx)
	if err != nil {
		return err
	}
	solved, err := key.Verify(payload, a.pow.now())
	switch {
	case errors.Is(err, altcha.ErrExpired):
		count("expired")
		return tools.Errorf(CodeProofOfWorkInvalid, "the proof of work's challenge expired: fetch a new challenge from GET /api/chat/challenge, solve it and send the turn again")
	case err != nil:
		count("invalid")
		return tools.Errorf(CodeProofOfWorkInvalid, "the Altcha header is not a solved challenge of this site: fetch a new challenge from GET /api/chat/challenge, solve it and send the turn again")
	}
	spent, err := a.db.SpendChallenge(ctx, solved.Challenge[:], solved.Expires)
	if err != nil {
		return err
	}
	if !spent {
		count("replayed")
		return tools.Errorf(CodeProofOfWorkInvalid, "this proof of work was used before, and a solved challenge is good for one turn: fetch a new challenge from GET /api/chat/challenge, solve it and send the turn again")
	}
	count("solved")
	return nil
}
