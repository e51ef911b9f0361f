// Hostile inputs for the same-origin guard, for a site at `origin`: every one must be
// refused. The unit tests run them through guardSameOrigin; the end-to-end tests through
// open_page and as links in a streamed chat answer, in real Chromium.
export function hostileURLs(origin) {
  const o = new URL(origin);
  const scheme = o.protocol; // "https:"
  const host = o.host; // "shop.example.com" or "127.0.0.1:4711"
  const port = o.port || (scheme === 'https:' ? '443' : '80');
  const otherPort = port === '1' ? '2' : '1';
  return [
    // other hosts, as a path or a url
    'https://evil.example/',
    'HTTPS://EVIL.EXAMPLE/',
    '//evil.example/x',
    '///evil.example/x',
    '////evil.example',
    `${scheme}////evil.example/`,
    ` //evil.example`,
    // dot segments and encoded dots and slashes that leave "//host" as the path
    '/.//evil.example/x',
    '/..//evil.example',
    '/./..//evil.example/',
    `${origin}/%2e//evil.example`,
    `${origin}/%2e%2e//evil.example`,
    '/%2E%2e//evil.example',
    '/%2F%2Fevil.example',
    '/%2f/evil.example',
    // backslashes
    '/\\evil.example',
    '\\\\evil.example',
    '\\/evil.example',
    '/%5Cevil.example',
    // whitespace and control characters, which URL parsers drop
    '/\t/evil.example',
    '/\n/evil.example',
    '/\u2028/evil.example',
    '/\u202e/evil.example',
    '/a\u0000b',
    // user info
    `${scheme}//${host}@evil.example/`,
    `${scheme}//user:pw@${host}/`,
    `${scheme}//evil.example\\@${host}/`,
    // look-alikes, IDN, other ports, IPv6
    `${scheme}//${o.hostname}.evil.example:${port}/`,
    // (a trailing dot is another host for a name; "127.0.0.1." is 127.0.0.1 itself)
    ...(/^[\d.]+$/.test(o.hostname) ? [] : [`${scheme}//${o.hostname}.:${port}/`]),
    `${scheme}//xn--80ak6aa92e.com/`,
    `${scheme}//аpple.com/`,
    `${scheme}//${o.hostname}:${otherPort}/`,
    `${scheme}//[::1]:${port}/`,
    `${scheme}//[::ffff:7f00:1]:${port}/`,
    // other schemes
    'javascript:alert(document.domain)',
    'JaVaScRiPt:alert(1)',
    'java\tscript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    `blob:${origin}/0a1b2c3d`,
    'vbscript:msgbox(1)',
    'file:///etc/passwd',
    // the service's own paths, plain and encoded
    '/api/chat/tools',
    '/%61pi/chat/tools',
    '/webmcp/chat.js',
    '/mcp',
  ];
}
