// The solver of the chat's proof of work (ALTCHA, version 1): find the number whose
// SHA-256, written after the challenge's salt, is the challenge. pow-worker.js runs it off
// the page's thread; pow.js runs it on the page where no Worker can start.
//
// SHA-256 is written out here rather than asked of WebCrypto: crypto.subtle.digest
// answers each hash asynchronously, and in Chromium on a 2-core machine it managed
// 50 000–90 000 hashes a second however many were awaited together, against about
// 700 000 for this loop, which hashes the salt's whole blocks once and then one or two
// blocks per number (bench/pow.bench.js measures it). A faster solver lets a site ask
// for more work for the same wait. It needs no secure context either.

// The most numbers a challenge may ask to try: CHAT_PROOF_OF_WORK_MAX_NUMBER's limit.
export const MAX_NUMBER = 10_000_000;

// Numbers tried between two pauses that let the thread do other work (on the page: the
// visitor's; in the Worker: its messages).
const SLICE = 50_000;

/** isChallenge says whether c is a challenge this solver can solve. */
export function isChallenge(c) {
  return (
    !!c &&
    c.algorithm === 'SHA-256' &&
    typeof c.challenge === 'string' &&
    /^[0-9a-f]{64}$/.test(c.challenge) &&
    typeof c.salt === 'string' &&
    c.salt.length <= 1000 &&
    Number.isInteger(c.maxnumber) &&
    c.maxnumber >= 0 &&
    c.maxnumber <= MAX_NUMBER
  );
}

/**
 * solve returns the challenge's number, trying 0, 1, 2, … up to its maxnumber, or null
 * when none solves it (or it is not a challenge).
 */
export async function solve(c) {
  if (!isChallenge(c)) return null;
  const search = searcher(c.salt, c.challenge);
  for (let from = 0; from <= c.maxnumber; from += SLICE) {
    const n = search(from, Math.min(from + SLICE - 1, c.maxnumber));
    if (n !== null) return n;
    await new Promise((r) => setTimeout(r, 0));
  }
  return null;
}

const K = Int32Array.from(
  [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
  ],
  (x) => x | 0,
);
const IV = Int32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19], (x) => x | 0);

/** compress runs SHA-256's compression of the block in w[0..15] into state. */
function compress(state, w) {
  for (let i = 16; i < 64; i++) {
    const x = w[i - 15];
    const y = w[i - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
  }
  let a = state[0];
  let b = state[1];
  let c = state[2];
  let d = state[3];
  let e = state[4];
  let f = state[5];
  let g = state[6];
  let h = state[7];
  for (let i = 0; i < 64; i++) {
    const t1 = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
    const t2 = ((((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] = (state[0] + a) | 0;
  state[1] = (state[1] + b) | 0;
  state[2] = (state[2] + c) | 0;
  state[3] = (state[3] + d) | 0;
  state[4] = (state[4] + e) | 0;
  state[5] = (state[5] + f) | 0;
  state[6] = (state[6] + g) | 0;
  state[7] = (state[7] + h) | 0;
}

/**
 * searcher returns search(from, to): the first number in [from, to] whose SHA-256 after
 * salt is the hex digest want, or null. The salt's whole 64-byte blocks are hashed once.
 */
export function searcher(salt, want) {
  const bytes = new TextEncoder().encode(salt);
  const target = Int32Array.from({ length: 8 }, (_, i) => Number.parseInt(want.slice(8 * i, 8 * i + 8), 16) | 0);
  const w = new Int32Array(64);
  const mid = IV.slice();
  const whole = bytes.length - (bytes.length % 64);
  for (let off = 0; off < whole; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = (bytes[off + 4 * i] << 24) | (bytes[off + 4 * i + 1] << 16) | (bytes[off + 4 * i + 2] << 8) | bytes[off + 4 * i + 3];
    compress(mid, w);
  }
  const tail = bytes.length - whole;
  const block = new Uint8Array(128); // the rest of the salt, the digits, the padding
  block.set(bytes.subarray(whole));
  const state = new Int32Array(8);
  return (from, to) => {
    for (let n = from; n <= to; n++) {
      let len = 1;
      for (let x = n; x >= 10; x = Math.floor(x / 10)) len++;
      for (let i = len - 1, x = n; i >= 0; i--, x = Math.floor(x / 10)) block[tail + i] = 48 + (x % 10);
      const end = tail + len;
      const blocks = end + 9 <= 64 ? 1 : 2;
      block.fill(0, end, 64 * blocks);
      block[end] = 0x80;
      const bits = (bytes.length + len) * 8;
      block[64 * blocks - 4] = bits >>> 24;
      block[64 * blocks - 3] = bits >>> 16;
      block[64 * blocks - 2] = bits >>> 8;
      block[64 * blocks - 1] = bits;
      state.set(mid);
      for (let k = 0; k < blocks; k++) {
        for (let i = 0; i < 16; i++) {
          const o = 64 * k + 4 * i;
          w[i] = (block[o] << 24) | (block[o + 1] << 16) | (block[o + 2] << 8) | block[o + 3];
        }
        compress(state, w);
      }
      if (state[0] === target[0] && state.every((v, i) => v === target[i])) return n;
    }
    return null;
  };
}
