-- +goose Up

-- A chunk's row (its text, its full-text vector and a 384-dimensional embedding: about
-- 3 kB) stays whole in its heap page. At PostgreSQL's default target of 2 kB every row
-- was compressed and its embedding moved to the TOAST table: a fifth of the work of
-- writing a chunk, a TOAST fetch for every vector the HNSW build and search_site's
-- distances read, and a decompression for every full-text vector ranked. A row larger
-- than a page (embeddings of several thousand dimensions) is still compressed and moved
-- out as before. Rows written before keep their form until their page changes or the
-- site is ingested again.
ALTER TABLE chunks SET (toast_tuple_target = 8160);

-- +goose Down
ALTER TABLE chunks RESET (toast_tuple_target);
