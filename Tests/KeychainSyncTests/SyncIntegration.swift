import Testing

/// Every suite that uses a PostgreSQL server, one after the other: they share the suite's
/// server, and the `security` processes some of them wait for must not queue behind another
/// suite's work on the test process's two-thread pool.
@Suite(.serialized) enum SyncIntegration {}
