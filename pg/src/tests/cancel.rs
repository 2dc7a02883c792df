//! A cancelled or terminated `train` stops within a mini-batch, not at
//! the end of the buffer in training: another session (dblink: a
//! statement timeout applies to a client's statements, not to those of
//! a test) trains a network one row at a time on a buffer of the whole
//! table, the slowest buffer there is, and is cancelled (statement
//! timeout) or terminated while the SGD thread is mid-buffer and the
//! backend has the next buffer read and waits to hand it over.
//!
//! No wall-clock threshold: the bound is half the time one such buffer
//! takes to train, measured in the same test. Had the backend waited for
//! the buffer to end (tocpile 0.1.0 blocked in a send), the cancel would
//! have taken most of a buffer's time.

#[pgrx::pg_schema]
mod tests {
    use std::time::Instant;

    use pgrx::prelude::*;

    use crate::tests::error_of;

    fn remote(sql: &str) -> String {
        format!(
            "SELECT dblink_exec('other', {})",
            pgrx::spi::quote_literal(sql)
        )
    }

    fn connect() -> i32 {
        Spi::run("CREATE EXTENSION IF NOT EXISTS dblink").unwrap();
        let socket = Spi::get_one::<String>(
            "SELECT split_part(current_setting('unix_socket_directories'), ',', 1)",
        )
        .unwrap()
        .unwrap();
        Spi::run(&format!(
            "SELECT dblink_connect('other', format('host=%s port=%s dbname=%s user=%s', \
             '{socket}', current_setting('port'), current_database(), current_user))"
        ))
        .unwrap();
        Spi::get_one::<i32>("SELECT p FROM dblink('other', 'SELECT pg_backend_pid()') AS t(p int4)")
            .unwrap()
            .unwrap()
    }

    /// The training of the test, on the other session's table `r`.
    fn train_sql(epochs: i64, double_buffer: bool) -> String {
        format!(
            "SELECT tocpile.train('r', 'label', model => 'mlp', batch_size => 1, buffer => 1.0, \
             epochs => {epochs}, double_buffer => {double_buffer})"
        )
    }

    /// Seconds one epoch (one buffer: the whole table) takes to train,
    /// and to read.
    fn one_buffer() -> (f64, f64) {
        Spi::run(&format!(
            "SELECT * FROM dblink('other', {}) AS t(m bytea)",
            pgrx::spi::quote_literal(train_sql(1, false))
        ))
        .unwrap();
        let report = Spi::get_one::<pgrx::JsonB>(
            "SELECT r FROM dblink('other', 'SELECT tocpile.last_train_report()') AS t(r jsonb)",
        )
        .unwrap()
        .unwrap()
        .0;
        let epoch = &report["epochs"][0];
        let read = epoch["read_seconds"].as_f64().unwrap();
        (epoch["seconds"].as_f64().unwrap() - read, read)
    }

    /// Sends `sql` to the other session without waiting.
    fn send(sql: &str) {
        Spi::run(&format!(
            "SELECT dblink_send_query('other', {})",
            pgrx::spi::quote_literal(sql)
        ))
        .unwrap();
    }

    /// Waits for the other session's result; returns its error message.
    fn error_of_sent() -> String {
        Spi::run("SELECT * FROM dblink_get_result('other', false) AS t(m bytea)").unwrap();
        let message = Spi::get_one::<String>("SELECT dblink_error_message('other')")
            .unwrap()
            .unwrap_or_default();
        // The end of the result set.
        Spi::run("SELECT * FROM dblink_get_result('other', false) AS t(m bytea)").unwrap();
        message
    }

    #[pg_test]
    fn a_cancel_or_terminate_stops_training_within_a_fraction_of_a_buffer() {
        let pid = connect();
        // A thousand rows: a buffer takes seconds to train (a network,
        // one row a step, in a debug build), milliseconds to read.
        Spi::run(&remote(
            "CREATE TEMP TABLE r AS SELECT random() AS x1, random() AS x2, \
             (random() > 0.5)::int AS label FROM generate_series(1, 1000)",
        ))
        .unwrap();
        let (train, read) = one_buffer();
        assert!(
            train > 5.0 * read + 0.2,
            "one buffer trains in {train:.3} s, reads in {read:.3} s: too fast to tell a \
             cancel that waits for the buffer from one that does not"
        );
        // Cancelled while the buffer after the first is read and waits
        // (double buffering), or while the first trains (single).
        let timeout = 2.0 * read + 0.1 * train;
        for double_buffer in [true, false] {
            Spi::run(&remote(&format!(
                "SET statement_timeout = {}",
                (timeout * 1000.0).ceil() as i64
            )))
            .unwrap();
            let start = Instant::now();
            send(&train_sql(2_147_483_647, double_buffer));
            let message = error_of_sent();
            let late = start.elapsed().as_secs_f64() - timeout;
            assert!(
                message.contains("canceling statement due to statement timeout"),
                "double_buffer {double_buffer}: {message:?}"
            );
            assert!(
                late < train / 2.0,
                "double_buffer {double_buffer}: returned {late:.3} s after the timeout; a \
                 buffer trains in {train:.3} s"
            );
            Spi::run(&remote("SET statement_timeout = 0")).unwrap();
            // The session goes on.
            let alive = Spi::get_one::<i64>(
                "SELECT n FROM dblink('other', 'SELECT count(*) FROM r') AS t(n int8)",
            );
            assert_eq!(alive.unwrap(), Some(1000));
        }
        // Terminated mid-buffer: the backend exits within the bound.
        send(&train_sql(2_147_483_647, true));
        Spi::run(&format!("SELECT pg_sleep({})", 2.0 * read + 0.1 * train)).unwrap();
        let bound_ms = (500.0 * train).ceil() as i64;
        let gone = Spi::get_one::<bool>(&format!("SELECT pg_terminate_backend({pid}, {bound_ms})"));
        assert_eq!(
            gone.unwrap(),
            Some(true),
            "not terminated within {bound_ms} ms"
        );
        // The connection is gone; so is its temporary table.
        error_of("SELECT dblink_disconnect('other')");
    }
}
