-- +goose Up

-- What the site owner learns without keeping what visitors typed: counts per UTC day,
-- nothing else. Every column is a day, a count, a word of a fixed vocabulary, or the
-- address of a page of the site; no question, answer, search term, address or
-- identifier of a visitor can be stored here, and the checks below refuse anything that
-- could carry one. Kept as long as the ledger (LEDGER_RETENTION_DAYS).
--
-- event                detail
-- search               the channel (chat, webmcp, mcp, internal)
-- search_no_result     the channel: no result matched the query's words, a synonym or
--                      a correction, and none was a close semantic neighbour
-- answer               kind/reason: model/stop, retrieval/llm_not_configured,
--                      degraded/llm_budget_exhausted, …
-- feedback             kind/rating/reason: model/down/wrong, retrieval/up/none, …
-- handover_offered     the answer's kind: the answer pointed to the contact page
-- handover_called      the browser tool: prefill_contact_form filled the form
CREATE TABLE activity_daily (
    day    date   NOT NULL,
    event  text   NOT NULL CHECK (event IN ('search', 'search_no_result', 'answer', 'feedback',
                                            'handover_offered', 'handover_called')),
    detail text   NOT NULL CHECK (detail ~ '^[a-z_/]{0,64}$'),
    n      bigint NOT NULL CHECK (n >= 0),
    PRIMARY KEY (day, event, detail)
);

-- Coverage of the site's pages: per page and day, how often a chat answer cited it and
-- how often it was a search's top result.
CREATE TABLE page_daily (
    day   date   NOT NULL,
    url   text   NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2048),
    cited bigint NOT NULL DEFAULT 0 CHECK (cited >= 0),
    top   bigint NOT NULL DEFAULT 0 CHECK (top >= 0),
    PRIMARY KEY (day, url)
);

-- Keys the service generates once, shared by every replica. 'answer_ids' signs the ids
-- of chat answers, so that feedback names an answer this site gave; the ids themselves
-- are never stored.
CREATE TABLE instance_keys (
    name text  PRIMARY KEY,
    key  bytea NOT NULL CHECK (length(key) >= 32)
);
INSERT INTO instance_keys (name, key)
VALUES ('answer_ids', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

-- +goose Down
DROP TABLE instance_keys;
DROP TABLE page_daily;
DROP TABLE activity_daily;
