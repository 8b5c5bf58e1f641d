"""What a Job's policies decide: pod failure policy, success policy, pod recreation backoff."""
