-- +goose Up

-- Appointments. They never leave the availability service: get_free_slots reads only
-- their start and end. Managed by `sitetools appointments` and the admin API.
CREATE TABLE bookings (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    start_at         timestamptz NOT NULL,
    end_at           timestamptz NOT NULL,
    title            text        NOT NULL DEFAULT '',
    attendee         text        NOT NULL DEFAULT '',
    notes            text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    cancelled_at     timestamptz,
    -- A create with an Idempotency-Key is stored once; the hash tells a retry from a
    -- different request under the same key.
    idempotency_key  text        UNIQUE,
    request_hash     bytea,
    CHECK (end_at > start_at)
);
CREATE INDEX bookings_active_range ON bookings (start_at, end_at) WHERE cancelled_at IS NULL;

-- +goose Down
DROP TABLE bookings;
