"""The Kubernetes protobuf wire encoding (application/vnd.kubernetes.protobuf) and its message schemas."""
