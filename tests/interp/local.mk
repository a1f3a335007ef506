# tests/interp/local.mk: interpreter, safetensors and mtc-run tests.
