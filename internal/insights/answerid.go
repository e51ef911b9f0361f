package insights

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// AnswerIDMaxAge is how long after its answer feedback on it is taken.
const AnswerIDMaxAge = 7 * 24 * time.Hour

// ErrUnknownAnswer is an answer id this site did not issue, or issued too long ago.
var ErrUnknownAnswer = errors.New("not an answer of this site, or older than 7 days")

// AnswerIDs issues and checks the ids of chat answers. An id says the day and the kind of
// its answer and carries a random part and a signature with a key every replica shares
// (instance_keys): it names no visitor, no question and no answer text, and is never
// stored. Feedback with an id this site did not sign is refused; a replayed id counts
// once (Recorder.Rate keeps its SHA-256 until the id is too old to be taken).
type AnswerIDs struct {
	pool *pgxpool.Pool
	now  func() time.Time

	mu  sync.Mutex
	key []byte // read from the database on first use
}

// NewAnswerIDs returns ids signed with the key in pool's database, read on first use (the
// database may be down when the service starts); now is nil for time.Now.
func NewAnswerIDs(pool *pgxpool.Pool, now func() time.Time) *AnswerIDs {
	if now == nil {
		now = time.Now
	}
	return &AnswerIDs{pool: pool, now: now}
}

func (a *AnswerIDs) loadKey(ctx context.Context) ([]byte, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.key != nil {
		return a.key, nil
	}
	var key []byte
	if err := a.pool.QueryRow(ctx, `SELECT key FROM instance_keys WHERE name = 'answer_ids'`).Scan(&key); err != nil {
		return nil, pgerr.Wrap("insights.AnswerIDs", err)
	}
	a.key = key
	return key, nil
}

var kindLetters = map[string]string{KindModel: "m", KindRetrieval: "r", KindDegraded: "d"}

// Issue returns a new id for an answer of kind: "<yyyymmdd>.<kind letter>.<random>.<mac>",
// 45 characters of [A-Za-z0-9._-]; an error if the key cannot be read.
func (a *AnswerIDs) Issue(ctx context.Context, kind string) (string, error) {
	key, err := a.loadKey(ctx)
	if err != nil {
		return "", err
	}
	var nonce [9]byte
	_, _ = rand.Read(nonce[:])
	body := a.now().UTC().Format("20060102") + "." + kindLetters[kind] + "." + base64.RawURLEncoding.EncodeToString(nonce[:])
	return body + "." + mac(key, body), nil
}

// Check returns the kind of the answer id names: ErrUnknownAnswer for an id this site did
// not issue or issued more than AnswerIDMaxAge ago, another error if the key cannot be
// read.
func (a *AnswerIDs) Check(ctx context.Context, id string) (string, error) {
	key, err := a.loadKey(ctx)
	if err != nil {
		return "", err
	}
	i := strings.LastIndexByte(id, '.')
	if i < 0 || !hmac.Equal([]byte(id[i+1:]), []byte(mac(key, id[:i]))) {
		return "", ErrUnknownAnswer
	}
	parts := strings.Split(id[:i], ".")
	if len(parts) != 3 {
		return "", ErrUnknownAnswer
	}
	day, err := time.Parse("20060102", parts[0])
	if err != nil || a.now().Sub(day) > AnswerIDMaxAge+24*time.Hour || day.After(a.now()) {
		return "", ErrUnknownAnswer
	}
	for kind, letter := range kindLetters {
		if parts[1] == letter {
			return kind, nil
		}
	}
	return "", ErrUnknownAnswer
}

func mac(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sitetools answer id\x00" + body))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}
