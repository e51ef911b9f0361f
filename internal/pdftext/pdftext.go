package pdftext

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klippa-app/go-pdfium"
	pdfiumerrors "github.com/klippa-app/go-pdfium/errors"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// Defaults of Options.
const (
	DefaultMaxPages     = 2000
	DefaultMaxTextBytes = 4 << 20
	DefaultMemoryBytes  = 128 << 20
	DefaultTimeout      = 30 * time.Second
)

// Options configure a Reader; the zero value means the defaults.
type Options struct {
	// MaxPages: a document of more pages is refused (ErrTooManyPages); default 2000.
	MaxPages int
	// MaxTextBytes: a document whose text is larger is refused (ErrTooMuchText); default 4 MB.
	MaxTextBytes int
	// MemoryBytes is the most memory PDFium may use for one document, its WebAssembly
	// linear memory (the file's bytes, decoded streams, fonts, pages): past it the
	// document is refused (ErrMemory). Rounded down to 64 KiB pages; default 128 MB.
	MemoryBytes int64
	// Timeout bounds the reading of one document (ErrTimeout); default 30 s.
	Timeout time.Duration
	// CacheDir keeps PDFium's compiled code, so that only the first process on a machine
	// compiles it (seconds of CPU and about 300 MB at its peak). "": the user's cache
	// directory (sitetools/pdfium below os.UserCacheDir); "off": compile in memory.
	CacheDir string
	Logger   *slog.Logger // nil discards
}

// Page is the text of one page, numbered from 1.
type Page struct {
	Number int
	Text   string
}

// Document is what a PDF says of itself and the pages that hold text.
type Document struct {
	Title string // the Info dictionary's /Title, "" when none
	Lang  string // the catalog's /Lang, e.g. "de-DE"; "" when none
	Pages []Page // in order; pages without text are left out
	Count int    // the pages the document has, with text or not
}

// Why a document is refused. Each is wrapped in an error whose message says it plainly.
var (
	ErrEncrypted    = errors.New("encrypted: reading it needs a password")
	ErrMalformed    = errors.New("not a readable PDF (damaged, truncated or not a PDF)")
	ErrTooManyPages = errors.New("too many pages")
	ErrTooMuchText  = errors.New("too much text")
	ErrMemory       = errors.New("over the memory cap")
	ErrTimeout      = errors.New("over the time cap")
	ErrNoText       = errors.New("no text (a scan without a text layer?)")
)

// Reader reads PDFs one at a time. The zero value is not usable; New makes one, and
// PDFium is compiled (or loaded from the cache) at its first document.
type Reader struct {
	opts Options
	sem  chan struct{} // one document at a time: the memory cap holds for the process

	once    sync.Once
	pool    pdfium.Pool
	initErr error
	mem     *memoryCap
}

// New returns a Reader with opts.
func New(opts Options) *Reader {
	if opts.MaxPages <= 0 {
		opts.MaxPages = DefaultMaxPages
	}
	if opts.MaxTextBytes <= 0 {
		opts.MaxTextBytes = DefaultMaxTextBytes
	}
	if opts.MemoryBytes < 16<<20 {
		opts.MemoryBytes = DefaultMemoryBytes
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Reader{opts: opts, sem: make(chan struct{}, 1), mem: &memoryCap{max: uint64(opts.MemoryBytes) &^ 0xffff}}
}

var (
	defaultOnce   sync.Once
	defaultReader *Reader
)

// Default is the process's shared Reader with the default options, its cache directory
// from PDF_CACHE_DIR when set.
func Default() *Reader {
	defaultOnce.Do(func() { defaultReader = New(Options{CacheDir: os.Getenv("PDF_CACHE_DIR")}) })
	return defaultReader
}

// Prepare compiles PDFium, or loads it from the cache, before the first document: an image
// build fills PDF_CACHE_DIR with the compiled code (`sitetools pdf-cache`), so that a
// process under a memory limit, on a read-only file system, only loads it.
func (r *Reader) Prepare() error { return r.init() }

// Limits are the caps the reader holds each document to.
func (r *Reader) Limits() Options { return r.opts }

// init compiles PDFium (or loads it from the cache) and makes the pool of its instances:
// one at a time, a new one for every document, so that nothing of one document is left
// for the next and its memory is returned at once.
func (r *Reader) init() error {
	r.once.Do(func() {
		start := time.Now()
		rc := wazero.NewRuntimeConfig().
			WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
			WithMemoryLimitPages(uint32(r.opts.MemoryBytes >> 16)).
			// A document past its deadline is stopped mid-call (Kill), not waited for.
			WithCloseOnContextDone(true)
		if cache := r.cache(); cache != nil {
			rc = rc.WithCompilationCache(cache)
		}
		r.pool, r.initErr = webassembly.Init(webassembly.Config{
			Context:  experimental.WithMemoryAllocator(context.Background(), r.mem),
			MaxIdle:  1,
			MaxTotal: 1,
			// No file system: documents are handed over as bytes.
			FSConfig:      wazero.NewFSConfig(),
			RuntimeConfig: rc,
			Stdout:        io.Discard,
			Stderr:        io.Discard,
		})
		if r.initErr != nil {
			r.initErr = fmt.Errorf("pdftext: starting PDFium: %w", r.initErr)
			return
		}
		r.opts.Logger.Info("pdf reader ready", "took", time.Since(start).Round(time.Millisecond))
	})
	return r.initErr
}

// cache is the compilation cache of CacheDir; nil for none.
func (r *Reader) cache() wazero.CompilationCache {
	dir := r.opts.CacheDir
	if dir == "off" {
		return nil
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "sitetools", "pdfium")
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		r.opts.Logger.Warn("pdf reader: no cache for its compiled code; compiling in memory", "err", err)
		return nil
	}
	return cache
}

// Read returns the text of the PDF in data, page by page. A document it refuses gives
// an error that wraps one of the Err values above and says why in words.
func (r *Reader) Read(ctx context.Context, data []byte) (*Document, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.sem }()
	inst, err := r.pool.GetInstanceWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("pdftext: %w", err)
	}
	r.mem.reset()
	dctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	var killed atomic.Bool
	stop := context.AfterFunc(dctx, func() {
		killed.Store(true)
		_ = inst.Kill()
	})
	doc, err := r.read(inst, data)
	if stop() {
		_ = inst.Close()
	}
	r.mem.release()
	switch {
	case err == nil:
		return doc, nil
	case killed.Load() && ctx.Err() != nil:
		return nil, ctx.Err()
	case killed.Load():
		return nil, fmt.Errorf("reading it took longer than %s: %w", r.opts.Timeout, ErrTimeout)
	case err != nil && r.mem.overrun():
		return nil, fmt.Errorf("reading it needed more than %d MB of memory: %w", r.opts.MemoryBytes>>20, ErrMemory)
	}
	return nil, r.explain(err)
}

// explain turns PDFium's errors into the reader's.
func (r *Reader) explain(err error) error {
	switch {
	case errors.Is(err, ErrTooManyPages), errors.Is(err, ErrTooMuchText), errors.Is(err, ErrNoText), errors.Is(err, ErrMalformed):
		return err
	case errors.Is(err, pdfiumerrors.ErrPassword), errors.Is(err, pdfiumerrors.ErrSecurity):
		return ErrEncrypted
	case errors.Is(err, pdfiumerrors.ErrFormat), errors.Is(err, pdfiumerrors.ErrFile), errors.Is(err, pdfiumerrors.ErrPage):
		return ErrMalformed
	}
	// A trap inside PDFium (a failed assertion on a hostile file): the document is the
	// cause, and the message of the trap (a WebAssembly stack) helps nobody.
	if strings.Contains(err.Error(), "wasm error") {
		return fmt.Errorf("PDFium stopped on it: %w", ErrMalformed)
	}
	return fmt.Errorf("pdftext: %w", err)
}

// Close stops PDFium; the Reader reads nothing after.
func (r *Reader) Close() error {
	if r.pool == nil {
		return nil
	}
	return r.pool.Close()
}
