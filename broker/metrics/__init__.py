"""A node's metrics: counted where requests and appends pass, read from the node's state at
scrape time, and served as Prometheus text on the node's metrics.listener (docs/metrics.md)."""
