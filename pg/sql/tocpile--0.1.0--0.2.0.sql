-- tocpile 0.1.0 -> 0.2.0 (ALTER EXTENSION tocpile UPDATE TO '0.2.0').
--
-- 0.1.0 kept every page table's metadata in one table,
-- tocpile.toc_tables, that any role could read and rewrite (a page
-- table's scaling factors leak each column's largest absolute value;
-- rewriting them made its owner's next model useless) and that kept the
-- rows of dropped tables. 0.2.0 keeps a page table's metadata in a row
-- of the page table itself (page_no = -1, the metadata as JSON in
-- page), with the table's privileges, gone when the table is dropped.
-- This script gives each page table listed in toc_tables its row and
-- drops toc_tables; then it declares the functions as 0.2.0 has them
-- (every argument nullable, named in the error when NULL; two new
-- functions, page_table_info and load_libsvm).

-- toc_tables leaves the extension (and its configuration dump) first.
ALTER EXTENSION tocpile DROP TABLE tocpile.toc_tables;

-- Migration: begin
DO $migrate$
DECLARE
    r record;
    meta text;
BEGIN
    -- Exact floats in the JSON: the shortest text that reads back as the
    -- same double (the page table must train with the same factors).
    PERFORM pg_catalog.set_config('extra_float_digits', '1', true);
    FOR r IN SELECT t.* FROM tocpile.toc_tables t
             JOIN pg_catalog.pg_class c ON c.oid = t.relid
    LOOP
        -- Only a table of a page table's columns, without a metadata row.
        CONTINUE WHEN (SELECT count(*) FROM pg_catalog.pg_attribute a
                       WHERE a.attrelid = r.relid AND a.attnum > 0 AND NOT a.attisdropped
                         AND (a.attname, a.atttypid) IN (('page_no', 'int8'::regtype),
                                                          ('labels', 'bytea'::regtype),
                                                          ('page', 'bytea'::regtype))) <> 3;
        meta := pg_catalog.jsonb_build_object(
            'tocpile_page_table', 1, 'source', r.source, 'label', r.label,
            'features', pg_catalog.to_jsonb(r.features), 'n_cols', r.n_cols,
            'n_rows', r.n_rows, 'n_pages', r.n_pages, 'page_rows', r.page_rows,
            'format', r.format, 'scale', r.scale,
            'factors', pg_catalog.to_jsonb(r.factors),
            'stored_bytes', r.stored_bytes,
            'created', pg_catalog.to_jsonb(r.created) #>> '{}')::text;
        EXECUTE pg_catalog.format(
            'INSERT INTO %s (page_no, labels, page) SELECT -1, ''\x'', pg_catalog.convert_to($1, ''UTF8'') '
            'WHERE NOT EXISTS (SELECT 1 FROM %s WHERE page_no = -1)', r.relid, r.relid)
            USING meta;
    END LOOP;
END
$migrate$;
DROP TABLE tocpile.toc_tables;
-- Migration: end

-- The functions as 0.2.0 declares them.
-- tocpile::encode_table
CREATE OR REPLACE FUNCTION "encode_table"(
	"source" regclass, /* Option < PgRelation > */
	"label" TEXT, /* Option < & str > */
	"features" TEXT[], /* :: std :: option :: Option < Vec < Option < String > > > */
	"target" TEXT, /* Option < & str > */
	"page_rows" INT DEFAULT 50, /* Option < i32 > */
	"format" TEXT DEFAULT 'toc', /* Option < & str > */
	"scale" TEXT DEFAULT 'maxabs' /* Option < & str > */
) RETURNS jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'encode_table_wrapper';

-- tocpile::encode_table
CREATE OR REPLACE FUNCTION "encode_table"(
	"source" regclass, /* Option < PgRelation > */
	"label" TEXT, /* Option < & str > */
	"features" TEXT, /* Option < & str > */
	"target" TEXT, /* Option < & str > */
	"page_rows" INT DEFAULT 50, /* Option < i32 > */
	"format" TEXT DEFAULT 'toc', /* Option < & str > */
	"scale" TEXT DEFAULT 'maxabs' /* Option < & str > */
) RETURNS jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'encode_table_column_wrapper';

-- tocpile::evaluate
CREATE OR REPLACE FUNCTION "evaluate"(
	"model" tocpile.model, /* Option < ModelBytes > */
	"relation" regclass, /* Option < PgRelation > */
	"label" TEXT DEFAULT NULL, /* Option < & str > */
	"features" TEXT[] DEFAULT NULL /* :: std :: option :: Option < Vec < Option < String > > > */
) RETURNS jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'evaluate_wrapper';

-- tocpile::evaluate
CREATE OR REPLACE FUNCTION "evaluate"(
	"model" tocpile.model, /* Option < ModelBytes > */
	"relation" regclass, /* Option < PgRelation > */
	"label" TEXT, /* Option < & str > */
	"features" TEXT /* Option < & str > */
) RETURNS jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'evaluate_column_wrapper';

-- tocpile::last_train_report
CREATE OR REPLACE FUNCTION "last_train_report"() RETURNS jsonb /* Option < JsonB > */
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'last_train_report_wrapper';

-- tocpile::load_libsvm
CREATE OR REPLACE FUNCTION "load_libsvm"(
	"path" TEXT, /* Option < & str > */
	"target" TEXT, /* Option < & str > */
	"n_cols" INT DEFAULT NULL /* Option < i32 > */
) RETURNS jsonb /* JsonB */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'load_libsvm_wrapper';

-- tocpile::model_bytes
CREATE OR REPLACE FUNCTION "model_bytes"(
	"model" tocpile.model /* ModelBytes */
) RETURNS bytea /* Vec < u8 > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'model_bytes_wrapper';

-- tocpile::model_from_bytes
CREATE OR REPLACE FUNCTION "model_from_bytes"(
	"bytes" bytea /* Vec < u8 > */
) RETURNS tocpile.model /* ModelBytes */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'model_from_bytes_wrapper';

-- tocpile::model_info
CREATE OR REPLACE FUNCTION "model_info"(
	"model" tocpile.model /* ModelBytes */
) RETURNS jsonb /* JsonB */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'model_info_wrapper';

-- tocpile::page_table_info
CREATE OR REPLACE FUNCTION "page_table_info"(
	"relation" regclass /* Option < PgRelation > */
) RETURNS jsonb /* JsonB */
STABLE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'page_table_info_wrapper';

-- tocpile::predict
CREATE OR REPLACE FUNCTION "predict"(
	"model" tocpile.model, /* ModelBytes */
	"features" double precision[] /* Vec < Option < f64 > > */
) RETURNS double precision /* f64 */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'predict_wrapper';

-- tocpile::predict_proba
CREATE OR REPLACE FUNCTION "predict_proba"(
	"model" tocpile.model, /* ModelBytes */
	"features" double precision[] /* Vec < Option < f64 > > */
) RETURNS double precision[] /* :: std :: option :: Option < Vec < f64 > > */
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'predict_proba_wrapper';

-- tocpile::scan_blocks
CREATE OR REPLACE FUNCTION "scan_blocks"(
	"relation" regclass, /* Option < PgRelation > */
	"shuffled" bool DEFAULT true, /* Option < bool > */
	"block_pages" INT DEFAULT 1 /* Option < i32 > */
) RETURNS bigint /* i64 */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'scan_blocks_wrapper';

-- tocpile::train
CREATE OR REPLACE FUNCTION "train"(
	"relation" regclass, /* Option < PgRelation > */
	"label" TEXT DEFAULT NULL, /* Option < & str > */
	"features" TEXT[] DEFAULT NULL, /* :: std :: option :: Option < Vec < Option < String > > > */
	"model" TEXT DEFAULT 'lr', /* Option < & str > */
	"shuffle" TEXT DEFAULT 'corgipile', /* Option < & str > */
	"epochs" INT DEFAULT 10, /* Option < i32 > */
	"batch_size" INT DEFAULT 250, /* Option < i32 > */
	"buffer" double precision DEFAULT 0.1, /* Option < f64 > */
	"lr" double precision DEFAULT NULL, /* Option < f64 > */
	"seed" bigint DEFAULT 0, /* Option < i64 > */
	"optimizer" TEXT DEFAULT 'adam', /* Option < & str > */
	"decay" double precision DEFAULT 0.95, /* Option < f64 > */
	"l2" double precision DEFAULT 0.0, /* Option < f64 > */
	"scale" TEXT DEFAULT 'auto', /* Option < & str > */
	"block_pages" INT DEFAULT 1, /* Option < i32 > */
	"classes" INT DEFAULT NULL, /* Option < i32 > */
	"double_buffer" bool DEFAULT true /* Option < bool > */
) RETURNS tocpile.model /* ModelBytes */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'train_wrapper';

-- tocpile::train
CREATE OR REPLACE FUNCTION "train"(
	"relation" regclass, /* Option < PgRelation > */
	"label" TEXT, /* Option < & str > */
	"features" TEXT, /* Option < & str > */
	"model" TEXT DEFAULT 'lr', /* Option < & str > */
	"shuffle" TEXT DEFAULT 'corgipile', /* Option < & str > */
	"epochs" INT DEFAULT 10, /* Option < i32 > */
	"batch_size" INT DEFAULT 250, /* Option < i32 > */
	"buffer" double precision DEFAULT 0.1, /* Option < f64 > */
	"lr" double precision DEFAULT NULL, /* Option < f64 > */
	"seed" bigint DEFAULT 0, /* Option < i64 > */
	"optimizer" TEXT DEFAULT 'adam', /* Option < & str > */
	"decay" double precision DEFAULT 0.95, /* Option < f64 > */
	"l2" double precision DEFAULT 0.0, /* Option < f64 > */
	"scale" TEXT DEFAULT 'auto', /* Option < & str > */
	"block_pages" INT DEFAULT 1, /* Option < i32 > */
	"classes" INT DEFAULT NULL, /* Option < i32 > */
	"double_buffer" bool DEFAULT true /* Option < bool > */
) RETURNS tocpile.model /* ModelBytes */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'train_column_wrapper';
