// The chat widget's words, in English and German. A site overrides any of them with
// the element's `strings` property (an object of keys below, per language or for all),
// or the most visible ones with the attributes `label` and `placeholder`.

export const STRINGS = {
  en: {
    launcher: 'Ask this site',
    title: 'Ask this site',
    close: 'Close chat',
    clear: 'Clear',
    clearTitle: 'Delete this conversation from this browser',
    clearConfirm: 'Delete this conversation from this browser?',
    cleared: 'Conversation deleted.',
    consentTitle: 'Before you start',
    consent1: 'Your conversation is kept in this browser only (its local storage), until you delete it with “Clear”.',
    consent2: 'Each time you send a message, the conversation so far is sent to this site to answer it.',
    consent3: 'The site keeps nothing after answering: no copy of the conversation, no cookies, no account.',
    accept: 'Accept and start',
    decline: 'Not now',
    noStorage: 'This browser does not allow storing the conversation, so the chat cannot start.',
    hint: 'Ask about services, prices, the team or free appointment slots. Answers link to the pages they come from.',
    conversation: 'Conversation',
    you: 'You',
    assistant: 'Assistant',
    savedByClient: ' (saved by your MCP client)',
    sources: 'Sources',
    question: 'Your question',
    placeholder: 'Ask about services, prices, free slots…',
    send: 'Send',
    answering: 'The assistant is answering…',
    activity: 'Tools used for this answer',
    searchRunning: 'Searching the site…',
    searchDone: 'Searched the site',
    searchFailed: 'Searching the site failed',
    pageRunning: 'Reading a page…',
    pageDone: 'Read a page',
    pageFailed: 'Reading a page failed',
    slotsRunning: 'Looking up free times…',
    slotsDone: 'Looked up free times',
    slotsFailed: 'Looking up free times failed',
    toolRunning: 'Using a tool…',
    toolDone: 'Used a tool',
    toolFailed: 'A tool failed',
    toolDetail: 'Tool {name}: {status}',
    statusRunning: 'running',
    statusDone: 'done',
    statusFailed: 'failed',
    done: 'Answer complete.',
    failed: 'The answer failed.',
    unreachable: 'The site could not be reached.',
    needConsent: 'The site needs your consent first.',
    notAvailable: 'The chat is not available on this site right now.',
    tooMany: 'Too many questions at once.',
    tooManyWait: 'Too many questions at once; try again in {n} seconds.',
    busyService: 'The assistant is busy; try again in a moment.',
    httpError: 'The site answered HTTP {n}.',
    tooLong: 'That question is too long; please shorten it.',
    pillOff: 'MCP: off',
    pillUnavailable: 'MCP: unavailable',
    pillConnecting: 'MCP: connecting…',
    pillOn: 'MCP: on · {n} tools',
    cardTitle: 'Your MCP client',
    cardNote: 'Let your own assistant (Claude, Cursor…) use this site’s tools through the WebMCP relay on your computer. Ask it for a WebMCP token and paste it here.',
    token: 'Relay token',
    connect: 'Connect',
    disconnect: 'Disconnect',
    toolsOffered: '{n} tools offered',
    guide: 'Step by step: connect your MCP client',
    tokenHelp: 'Your MCP client gives you the token.',
    tokenHelpLink: 'How?',
    statusOff: 'Not connected.',
    statusOffWhy: 'Not connected: {why}.',
    statusConnecting: 'Connecting to the relay…',
    statusOn: 'Connected: your MCP client can use this site’s tools.',
    statusUnavailable: 'The relay widget is not installed on this site.',
    statusNoToken: 'Not connected: paste the token from your MCP client first.',
  },
  de: {
    launcher: 'Diese Website fragen',
    title: 'Diese Website fragen',
    close: 'Chat schließen',
    clear: 'Löschen',
    clearTitle: 'Dieses Gespräch aus diesem Browser löschen',
    clearConfirm: 'Dieses Gespräch aus diesem Browser löschen?',
    cleared: 'Gespräch gelöscht.',
    consentTitle: 'Bevor Sie beginnen',
    consent1: 'Ihr Gespräch wird nur in diesem Browser gespeichert (im lokalen Speicher), bis Sie es mit „Löschen“ entfernen.',
    consent2: 'Mit jeder Nachricht wird das bisherige Gespräch an diese Website geschickt, damit sie antworten kann.',
    consent3: 'Die Website behält nach der Antwort nichts: keine Kopie des Gesprächs, keine Cookies, kein Konto.',
    accept: 'Zustimmen und starten',
    decline: 'Nicht jetzt',
    noStorage: 'Dieser Browser erlaubt kein Speichern des Gesprächs, darum kann der Chat nicht starten.',
    hint: 'Fragen Sie nach Leistungen, Preisen, dem Team oder freien Terminen. Antworten verlinken die Seiten, aus denen sie stammen.',
    conversation: 'Gespräch',
    you: 'Sie',
    assistant: 'Assistent',
    savedByClient: ' (von Ihrem MCP-Client gespeichert)',
    sources: 'Quellen',
    question: 'Ihre Frage',
    placeholder: 'Fragen Sie nach Leistungen, Preisen, Terminen…',
    send: 'Senden',
    answering: 'Der Assistent antwortet…',
    activity: 'Für diese Antwort genutzte Tools',
    searchRunning: 'Durchsuche die Website…',
    searchDone: 'Website durchsucht',
    searchFailed: 'Suche auf der Website fehlgeschlagen',
    pageRunning: 'Lese eine Seite…',
    pageDone: 'Seite gelesen',
    pageFailed: 'Lesen einer Seite fehlgeschlagen',
    slotsRunning: 'Suche freie Termine…',
    slotsDone: 'Freie Termine nachgesehen',
    slotsFailed: 'Suche nach freien Terminen fehlgeschlagen',
    toolRunning: 'Nutze ein Tool…',
    toolDone: 'Tool genutzt',
    toolFailed: 'Ein Tool ist fehlgeschlagen',
    toolDetail: 'Tool {name}: {status}',
    statusRunning: 'läuft',
    statusDone: 'erledigt',
    statusFailed: 'fehlgeschlagen',
    done: 'Antwort vollständig.',
    failed: 'Die Antwort ist fehlgeschlagen.',
    unreachable: 'Die Website ist nicht erreichbar.',
    needConsent: 'Die Website braucht zuerst Ihre Zustimmung.',
    notAvailable: 'Der Chat ist auf dieser Website gerade nicht verfügbar.',
    tooMany: 'Zu viele Fragen auf einmal.',
    tooManyWait: 'Zu viele Fragen auf einmal; versuchen Sie es in {n} Sekunden wieder.',
    busyService: 'Der Assistent ist ausgelastet; versuchen Sie es gleich noch einmal.',
    httpError: 'Die Website antwortete mit HTTP {n}.',
    tooLong: 'Diese Frage ist zu lang; bitte kürzen Sie sie.',
    pillOff: 'MCP: aus',
    pillUnavailable: 'MCP: nicht verfügbar',
    pillConnecting: 'MCP: verbinde…',
    pillOn: 'MCP: an · {n} Tools',
    cardTitle: 'Ihr MCP-Client',
    cardNote: 'Lassen Sie Ihren eigenen Assistenten (Claude, Cursor…) die Tools dieser Website über das WebMCP-Relay auf Ihrem Computer nutzen. Lassen Sie sich dort ein WebMCP-Token geben und fügen Sie es hier ein.',
    token: 'Relay-Token',
    connect: 'Verbinden',
    disconnect: 'Trennen',
    toolsOffered: '{n} Tools angeboten',
    guide: 'Schritt für Schritt: Ihren MCP-Client verbinden',
    tokenHelp: 'Das Token gibt Ihnen Ihr MCP-Client.',
    tokenHelpLink: 'Wie?',
    statusOff: 'Nicht verbunden.',
    statusOffWhy: 'Nicht verbunden: {why}.',
    statusConnecting: 'Verbinde mit dem Relay…',
    statusOn: 'Verbunden: Ihr MCP-Client kann die Tools dieser Website nutzen.',
    statusUnavailable: 'Das Relay-Widget ist auf dieser Website nicht installiert.',
    statusNoToken: 'Nicht verbunden: fügen Sie zuerst das Token aus Ihrem MCP-Client ein.',
  },
};

/** languageOf maps a BCP 47 tag ("de-AT", "en") to a language the widget speaks. */
export function languageOf(tag) {
  const primary = String(tag || '').trim().toLowerCase().split(/[-_]/)[0];
  return Object.hasOwn(STRINGS, primary) ? primary : 'en';
}

/**
 * stringsFor is the table of one language with the site's overrides: `overrides` is
 * either flat ({launcher: '…'}) or per language ({de: {launcher: '…'}}).
 */
export function stringsFor(lang, overrides) {
  const out = { ...STRINGS.en, ...STRINGS[lang] };
  if (overrides && typeof overrides === 'object') {
    for (const [k, v] of Object.entries(overrides)) {
      if (typeof v === 'string' && Object.hasOwn(out, k)) out[k] = v;
    }
    const own = overrides[lang];
    if (own && typeof own === 'object') {
      for (const [k, v] of Object.entries(own)) {
        if (typeof v === 'string' && Object.hasOwn(out, k)) out[k] = v;
      }
    }
  }
  return out;
}

/** fill replaces {n}, {why} and the like in a string. */
export function fill(s, vars) {
  return s.replace(/\{(\w+)\}/g, (m, k) => (vars && vars[k] !== undefined ? String(vars[k]) : m));
}
