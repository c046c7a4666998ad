"""Weight-sync broadcast schedules: two-level (App. E) and naive one-to-all."""
