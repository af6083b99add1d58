"""Engine-neutral stages of the dedup pipeline, shared by every engine (the local batch job in
``neardup.engines.local``, Spark in ``neardup.engines.spark``, the incremental index in
``neardup.index``): the run options, the signer, candidate pairs, verification, keepers, the
stage log and report, and the outputs contract. Nothing here imports an engine, the service
or the CLI (import-linter checks it)."""
