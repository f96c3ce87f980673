"""The streaming host: a gRPC ``dumpcmp.v1.DumpCompare`` server, its session store and files."""
