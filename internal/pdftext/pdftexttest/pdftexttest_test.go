package pdftexttest

import (
	"bytes"
	"compress/zlib"
	"io"
	"testing"
)

// TestBomb: the bomb's stream is valid zlib (its checksum included) of the size asked.
func TestBomb(t *testing.T) {
	pdf := Bomb(8 << 20)
	start := bytes.Index(pdf, []byte("stream\n")) + len("stream\n")
	end := bytes.LastIndex(pdf, []byte("\nendstream"))
	r, err := zlib.NewReader(bytes.NewReader(pdf[start:end]))
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		t.Fatalf("after %d bytes: %v", n, err)
	}
	if want := int64(8<<20) + int64(len("BT /F1 12 Tf 72 712 Td (a bomb) Tj ET\n")); n != want {
		t.Errorf("inflates to %d bytes; want %d", n, want)
	}
	if len(pdf) > 20<<10 {
		t.Errorf("%d bytes for 8 MB", len(pdf))
	}
}
