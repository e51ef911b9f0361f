package llm

import "hash/maphash"

// vocab is cl100k_base's byte-pair ranks, held where a garbage collection has nothing
// to mark: the tokens' bytes one after another in one string, and an open-addressing
// table of indexes into it, all without pointers. A map[string]int of the same 100 000
// tokens holds as many strings of their own, which every collection of a running
// service marks one by one (most of the objects on its heap). The ranks of the two-byte
// tokens are in an array as well: the first lookups of every merge are of two bytes.
type vocab struct {
	text  string   // every token, one after another
	ends  []uint32 // token i is text[ends[i-1]:ends[i]] (from 0 for the first)
	ranks []int32  // token i's rank
	slots []uint32 // 1 + the index of a token, or 0: empty; the length a power of two
	seed  maphash.Seed
	pairs [1 << 16]int32 // -1: not a token
}

// newVocab lays out ranks.
func newVocab(ranks map[string]int) *vocab {
	v := &vocab{seed: maphash.MakeSeed(), ends: make([]uint32, 0, len(ranks)), ranks: make([]int32, 0, len(ranks))}
	for i := range v.pairs {
		v.pairs[i] = -1
	}
	size := 0
	for token := range ranks {
		size += len(token)
	}
	text := make([]byte, 0, size)
	n := 1
	for n < 2*len(ranks) {
		n <<= 1 // at most half full
	}
	v.slots = make([]uint32, n)
	for token, rank := range ranks {
		text = append(text, token...)
		v.ends = append(v.ends, uint32(len(text)))
		v.ranks = append(v.ranks, int32(rank))
		for i := v.slot(token); ; i = (i + 1) & uint64(n-1) {
			if v.slots[i] == 0 {
				v.slots[i] = uint32(len(v.ends))
				break
			}
		}
		if len(token) == 2 {
			v.pairs[int(token[0])<<8|int(token[1])] = int32(rank)
		}
	}
	v.text = string(text)
	return v
}

func (v *vocab) slot(s string) uint64 {
	return maphash.String(v.seed, s) & uint64(len(v.slots)-1)
}

// rank returns the rank of token s, or false.
func (v *vocab) rank(s string) (int, bool) {
	if len(s) == 2 {
		r := v.pairs[int(s[0])<<8|int(s[1])]
		return int(r), r >= 0
	}
	mask := uint64(len(v.slots) - 1)
	for i := v.slot(s); ; i = (i + 1) & mask {
		e := v.slots[i]
		if e == 0 {
			return 0, false
		}
		start := uint32(0)
		if e > 1 {
			start = v.ends[e-2]
		}
		if v.text[start:v.ends[e-1]] == s {
			return int(v.ranks[e-1]), true
		}
	}
}
