# tests/onnx/local.mk: the ONNX importer: checked-in models against stored PyTorch results,
# models exported from PyTorch now (skipped without it), torchvision models trained against
# PyTorch, bad input, folds of known values, values of hand-written inputs.
TESTS += tests/onnx/files.sh tests/onnx/torch.sh tests/onnx/bad.sh tests/onnx/fold.sh tests/onnx/values.sh tests/onnx/external.sh tests/onnx/vision.sh
EXTRA_DIST += tests/onnx/files.sh tests/onnx/torch.sh tests/onnx/bad.sh tests/onnx/fold.sh tests/onnx/values.sh tests/onnx/external.sh tests/onnx/vision.sh \
	tests/onnx/vision.py tests/onnx/models.py \
	tests/onnx/check.py tests/onnx/data tests/onnx/bad tests/onnx/fold tests/onnx/values

# What the ONNX tests write.
clean-local: clean-local-onnx
clean-local-onnx:
	-rm -rf tests/out/onnx
.PHONY: clean-local-onnx
