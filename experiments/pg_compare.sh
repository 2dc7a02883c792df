#!/usr/bin/env bash
# The CorgiPile paper's in-database comparison (sections 7.3 and 7.4),
# inside PostgreSQL with the tocpile extension (pg/): on a label-sorted
# table, CorgiPile against Shuffle Once (an ORDER BY random() copy first,
# its time included) and No Shuffle, each for the same epochs, then test
# accuracy and loss on a shuffled held-out table; the same for the TOC
# page table made by tocpile.encode_table; the tables' sizes
# (pg_total_relation_size); and the block reader against count(*).
#
# The split is ../shared/tools/sorted_split.py's (written out below, so
# that the script runs from a clone alone): 10% of the rows (seed 42)
# form the test table, the rest, sorted by label, the training table
# (loaded with COPY in that order). Strategies are interleaved in each
# round; round r trains with seed SEED + r - 1 (the block and tuple
# orders, Shuffle Once's ORDER BY random() through setseed). The script
# prints every run's figures and the median of the rounds.
#
# Usage: bash experiments/pg_compare.sh [--dataset census_fertility]
#   [--file FILE.libsvm[.gz]] [--epochs 3] [--rounds 3] [--seed 0]
#   [--runas USER]
# The data: --file, else ../shared/data/DATASET.libsvm.gz, else
# data/DATASET.libsvm.gz (census_fertility, mushrooms and coil2000 ship
# in data/). With --runas, a private cluster is made for the run (initdb
# as USER in a temporary directory, port 5499, removed at exit);
# otherwise psql's usual PG* variables name a server where the extension
# is installed (`cargo pgrx install --release` in pg/). Needs python3
# and psql.
set -euo pipefail
cd "$(dirname "$0")/.."
dataset=census_fertility
epochs=3
rounds=3
seed=0
runas=
file=
while [ $# -gt 0 ]; do
    case $1 in
        --dataset) dataset=$2; shift 2 ;;
        --file) file=$2; shift 2 ;;
        --epochs) epochs=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --runas) runas=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
if [ -n "$file" ]; then
    data=$file
    dataset=$(basename "$file" | sed 's/\.gz$//; s/\.[^.]*$//')
elif [ -f "../shared/data/$dataset.libsvm.gz" ]; then
    data=../shared/data/$dataset.libsvm.gz
else
    data=data/$dataset.libsvm.gz
fi
if [ ! -f "$data" ]; then
    echo "no data: $data does not exist (give a LIBSVM file with --file)" >&2
    exit 2
fi
work=$(mktemp -d)
chmod 755 "$work"
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
cleanup() {
    if [ -n "$runas" ] && [ -f "$work/db/postmaster.pid" ]; then
        sudo -u "$runas" "$bin/pg_ctl" -D "$work/db" -m fast stop >/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

if [ -n "$runas" ]; then
    mkdir -p "$work/db" "$work/sock"
    chown "$runas" "$work/db" "$work/sock"
    sudo -u "$runas" "$bin/initdb" -D "$work/db" -A trust >/dev/null
    # The paper's setting: work_mem as large as the sort needs (7.1.5);
    # shared buffers that hold the tables.
    sudo -u "$runas" "$bin/pg_ctl" -D "$work/db" -l "$work/db/log" -w \
        -o "-p 5499 -k $work/sock -c shared_buffers=1GB -c work_mem=1GB -c max_parallel_workers_per_gather=0" \
        start >/dev/null
    export PGHOST=$work/sock PGPORT=5499 PGUSER=$runas PGDATABASE=postgres
fi
psql() { command psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# Split (../shared/tools/sorted_split.py's algorithm: the same split for
# the same file and seed) and convert: LIBSVM -> CSV of label and dense
# columns.
python3 - "$data" "$work" 0.1 42 <<'EOF'
import gzip, random, sys
src, out, share, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
op = gzip.open if src.endswith(".gz") else open
with op(src, "rt") as f:
    lines = f.read().splitlines()
random.Random(seed).shuffle(lines)
k = int(len(lines) * share)
test, train = lines[:k], lines[k:]
train.sort(key=lambda l: float(l.split(None, 1)[0]))
open(f"{out}/train.libsvm", "w").write("\n".join(train) + "\n")
open(f"{out}/test.libsvm", "w").write("\n".join(test) + "\n")
EOF
n_cols=$(python3 - "$work" <<'EOF'
import sys
work = sys.argv[1]
n = 0
for part in ("train", "test"):
    for line in open(f"{work}/{part}.libsvm"):
        for tok in line.split()[1:]:
            n = max(n, int(tok.split(":")[0]))
for part in ("train", "test"):
    with open(f"{work}/{part}.csv", "w") as out:
        for line in open(f"{work}/{part}.libsvm"):
            toks = line.split()
            row = ["0"] * n
            for tok in toks[1:]:
                i, v = tok.split(":")
                row[int(i) - 1] = v
            out.write(",".join([toks[0]] + row) + "\n")
print(n)
EOF
)
cols=$(seq -s, -f "c%g float8" 1 "$n_cols")
echo "dataset $dataset: $n_cols columns, $(wc -l < "$work/train.csv") training rows (label-sorted), $(wc -l < "$work/test.csv") test rows"

psql <<EOF
CREATE EXTENSION IF NOT EXISTS tocpile;
DROP TABLE IF EXISTS cmp_train, cmp_test, cmp_runs;
DROP TABLE IF EXISTS cmp_train_toc;
CREATE TABLE cmp_train (label float8, $cols);
CREATE TABLE cmp_test (label float8, $cols);
\copy cmp_train FROM '$work/train.csv' WITH (FORMAT csv)
\copy cmp_test FROM '$work/test.csv' WITH (FORMAT csv)
SELECT tocpile.encode_table('cmp_train', 'label', NULL, 'cmp_train_toc');
VACUUM (FREEZE, ANALYZE) cmp_train, cmp_test, cmp_train_toc;
CREATE TABLE cmp_runs (round int, source text, shuffle text, model tocpile.model, report jsonb, test jsonb);
EOF

echo
echo "## Table sizes"
psql -c "SELECT c AS table, pg_total_relation_size(c) AS bytes, pg_size_pretty(pg_total_relation_size(c)) AS size,
                (SELECT count(*) FROM cmp_train) AS rows
         FROM unnest(ARRAY['cmp_train', 'cmp_train_toc']::regclass[]) c"
psql -Atc "SELECT 'plain / page table: ' || round(pg_total_relation_size('cmp_train')::numeric / pg_total_relation_size('cmp_train_toc'), 2)"

echo
echo "## Reading blocks against count(*) (seconds, best of 5)"
psql <<'EOF'
CREATE FUNCTION pg_temp.seconds(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t timestamptz; best float8 := 'Infinity';
BEGIN
  FOR i IN 1..5 LOOP
    t := clock_timestamp();
    EXECUTE q;
    best := least(best, extract(epoch FROM clock_timestamp() - t));
  END LOOP;
  RETURN best;
END $$;
SELECT q AS query, round(pg_temp.seconds(q)::numeric, 4) AS seconds FROM unnest(ARRAY[
  'SELECT count(*) FROM cmp_train',
  'SELECT tocpile.scan_blocks(''cmp_train'', shuffled => false)',
  'SELECT tocpile.scan_blocks(''cmp_train'', shuffled => true)',
  'SELECT count(*) FROM cmp_train_toc',
  'SELECT tocpile.scan_blocks(''cmp_train_toc'', shuffled => true)']) q;
EOF

for round in $(seq 1 "$rounds"); do
    # source:shuffle:double_buffer ("corgipile 1buf": the paper's
    # single-buffer CorgiPile, Figure 13).
    for run in cmp_train:corgipile:true cmp_train:once:true cmp_train:none:true \
        cmp_train:corgipile:false cmp_train_toc:corgipile:true cmp_train_toc:none:true; do
        IFS=: read -r source shuffle double <<< "$run"
        label="'label'"
        [ "$source" = cmp_train ] || label=NULL
        name=$shuffle
        [ "$double" = true ] || name="$shuffle 1buf"
        psql <<EOF
SET client_min_messages = warning;
INSERT INTO cmp_runs (round, source, shuffle, model)
SELECT $round, '$source', '$name',
       tocpile.train('$source', $label, shuffle => '$shuffle', epochs => $epochs,
                     seed => $((seed + round - 1)), double_buffer => $double);
UPDATE cmp_runs SET report = tocpile.last_train_report(), test = tocpile.evaluate(model, 'cmp_test', 'label')
WHERE round = $round AND source = '$source' AND shuffle = '$name';
EOF
    done
done

echo
echo "## Every run"
psql -c "SELECT round, source, shuffle,
                round((test->>'accuracy')::numeric, 4) AS test_accuracy,
                round((test->>'loss')::numeric, 4) AS test_loss,
                round((report->>'total_seconds')::numeric, 3) AS total_s,
                round((report->>'shuffle_seconds')::numeric, 3) AS shuffle_s,
                round((report->>'setup_seconds')::numeric, 3) AS setup_s,
                (SELECT string_agg(round((e->>'seconds')::numeric, 3)::text, ' / ') FROM jsonb_array_elements(report->'epochs') e) AS epoch_s,
                (SELECT string_agg(round((e->>'read_seconds')::numeric, 3)::text, ' / ') FROM jsonb_array_elements(report->'epochs') e) AS read_s
         FROM cmp_runs ORDER BY source, shuffle, round"

echo
echo "## Median of $rounds rounds ($epochs epochs, seeds $seed to $((seed + rounds - 1)))"
psql <<'EOF'
WITH r AS (
  SELECT source, shuffle,
         (test->>'accuracy')::float8 AS acc, (test->>'loss')::float8 AS loss,
         (report->>'total_seconds')::float8 AS total,
         (report->>'shuffle_seconds')::float8 AS shuffle_s,
         (report->>'epoch_seconds')::float8 / jsonb_array_length(report->'epochs') AS epoch
  FROM cmp_runs),
m AS (
  SELECT source, shuffle,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY acc) AS acc,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY loss) AS loss,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY total) AS total,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY shuffle_s) AS shuffle_s,
         percentile_cont(0.5) WITHIN GROUP (ORDER BY epoch) AS epoch
  FROM r GROUP BY source, shuffle)
SELECT '| ' || concat_ws(' | ', source, shuffle, round(acc::numeric * 100, 2) || '%', round(loss::numeric, 4),
       round(total::numeric, 3), round(shuffle_s::numeric, 3), round(epoch::numeric, 3),
       round((epoch / (SELECT epoch FROM m n WHERE n.source = 'cmp_train' AND n.shuffle = 'none'))::numeric, 2),
       round((total / (SELECT total FROM m c WHERE c.source = 'cmp_train' AND c.shuffle = 'corgipile'))::numeric, 2)) || ' |'
FROM m ORDER BY source, shuffle;
EOF
echo "(columns: table, shuffle, test accuracy, test loss, total s, shuffle s, mean epoch s, epoch / No Shuffle's on the plain table, total / CorgiPile's on the plain table)"
