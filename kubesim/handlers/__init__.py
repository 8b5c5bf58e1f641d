"""One module per API verb group: read, write, delete, watch, scale, pod subresources and reviews."""
