"""People: task types, batches, queues and leases, crowd studies, agreement, consensus, cleaned exports
and human baselines (the store they write to is `data.store`)."""
