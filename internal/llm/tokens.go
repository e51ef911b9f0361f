package llm

import (
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// encoding is cl100k_base, loaded once from the ranks embedded in the binary. The
// default loader of tiktoken-go downloads them at first use; the offline loader never
// touches the network.
var encoding = sync.OnceValue(func() *tiktoken.Tiktoken {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(tiktoken.MODEL_CL100K_BASE)
	if err != nil {
		return nil
	}
	return enc
})

// CountTokens returns the number of cl100k_base tokens in text: exact for OpenAI's
// embedding models, a close estimate for others. Special tokens such as <|endoftext|>
// count as ordinary text. Should the encoder fail to load, it returns a deliberately
// high estimate (a token per three bytes) so that budgets err on the safe side.
func CountTokens(text string) int {
	if text == "" {
		return 0
	}
	if enc := encoding(); enc != nil {
		return len(enc.EncodeOrdinary(text))
	}
	return len(text)/3 + 1
}
