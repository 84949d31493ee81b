# CTest tests of the Python bindings, included from tests/CMakeLists.txt
# (where testing is enabled). Each runs against a fresh ps_server started by
# with_ps_server.sh. Nothing is registered when the bindings were not built;
# the torch tests need torch in the bindings' interpreter (skipped without).
if(NOT TARGET taups_python)
  return()
endif()
get_target_property(taups_python_exe taups_python TAUPS_PYTHON_EXECUTABLE)
get_target_property(taups_python_path taups_python TAUPS_PYTHON_PATH)
get_target_property(taups_python_torch taups_python TAUPS_PYTHON_HAS_TORCH)
set(taups_python_dir ${PROJECT_SOURCE_DIR}/worker/python)

# taups_add_python_test(<name> <script> [args...])
function(taups_add_python_test name)
  add_test(NAME ${name}
    COMMAND ${taups_python_dir}/tests/with_ps_server.sh $<TARGET_FILE:ps_server>
            ${taups_python_exe} ${ARGN})
  set_tests_properties(${name} PROPERTIES
    LABELS integration
    TIMEOUT 180
    ENVIRONMENT "PYTHONPATH=${taups_python_path}:${taups_python_dir}/tests;PYTHONDONTWRITEBYTECODE=1;TAUPS_PS_SERVER=$<TARGET_FILE:ps_server>")
endfunction()

taups_add_python_test(python_binding_test
  ${taups_python_dir}/tests/test_binding.py)
# Mutual TLS and bearer tokens from Python: the test starts its own
# ps_server with certificates it makes (skipped without the openssl CLI).
taups_add_python_test(python_tls_tokens_test
  ${taups_python_dir}/tests/test_tls_tokens.py)
set_tests_properties(python_tls_tokens_test PROPERTIES SKIP_RETURN_CODE 77)
# The torch tests go through run_if_torch.py: without torch in the
# interpreter they exit 77 and CTest reports them skipped.
taups_add_python_test(python_torch_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_tensors.py)
# The bound is stated in the example's docstring and README.md.
taups_add_python_test(python_ctr_example_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/examples/ctr_torch.py --log_every=500
  --min_auc=0.76 --max_auc_gap=0.06)
# taups.torch: the modules against plain torch, prefetch under sync, the
# CUDA cases (they exit 77 without a CUDA device: skipped).
taups_add_python_test(python_torch_modules_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_modules.py)
taups_add_python_test(python_torch_prefetch_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_prefetch.py)
# ssp: prefetched and plain runs of two workers stay within the bound.
taups_add_python_test(python_torch_ssp_prefetch_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_ssp_prefetch.py)
# DenseParameters(prefetch=True): same parameters under sync, overlap
# under async.
taups_add_python_test(python_torch_dense_prefetch_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_dense_prefetch.py)
taups_add_python_test(python_torch_cuda_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_cuda.py)
# DenseParameters under semi_sync, refused stale pushes in StepStats.
taups_add_python_test(python_torch_policies_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_policies.py)
# CUDA gradients encoded on the GPU against the CPU codec (bytes and the
# shards' parameters); exits 77 without a device or the CUDA codecs.
taups_add_python_test(python_torch_device_codec_test
  ${taups_python_dir}/tests/run_if_torch.py
  ${taups_python_dir}/tests/test_torch_device_codec.py)
set_tests_properties(python_torch_test python_ctr_example_test
  python_torch_modules_test python_torch_prefetch_test python_torch_cuda_test
  python_torch_device_codec_test python_torch_policies_test
  python_torch_ssp_prefetch_test python_torch_dense_prefetch_test
  PROPERTIES SKIP_RETURN_CODE 77)
if(NOT taups_python_torch)
  message(STATUS "tauPS: python_torch_test and python_ctr_example_test will "
                 "be skipped: ${taups_python_exe} has no torch (python3-torch)")
endif()

# The package installed by pip into a fresh venv, as a wheel and by
# cmake --install, each trained through against a real ps_server. It reuses
# this build directory's extension (TAUPS_PYTHON_BUILD_DIR), so nothing is
# compiled again; skipped without python3-venv, python3-build or python3-wheel.
add_test(NAME python_install_test
  COMMAND ${taups_python_dir}/tests/with_ps_server.sh $<TARGET_FILE:ps_server>
          ${taups_python_dir}/tests/pip_install_test.sh ${PROJECT_BINARY_DIR}
          ${PROJECT_SOURCE_DIR} ${taups_python_exe} ${TAUPS_PYTHON_INSTALL_DIR})
# Three pip installs and three short trainings: well under 300 s here when
# the machine is idle, but once past it at load 30; the limit leaves room.
set_tests_properties(python_install_test PROPERTIES
  LABELS integration
  TIMEOUT 600
  SKIP_RETURN_CODE 77)

# The PyTorch DLRM under torchrun (1 and 4 workers) against ps_worker
# --model=ctr on the same data, taups pip-installed into a fresh venv; each
# run starts its own ps_server. Skipped without torch or python3-venv.
add_test(NAME python_dlrm_torchrun_test
  COMMAND ${taups_python_dir}/tests/dlrm_torchrun_test.sh ${PROJECT_BINARY_DIR}
          ${PROJECT_SOURCE_DIR} ${taups_python_exe} $<TARGET_FILE:ps_server>
          $<TARGET_FILE:ps_worker>)
set_tests_properties(python_dlrm_torchrun_test PROPERTIES
  LABELS integration
  TIMEOUT 300
  SKIP_RETURN_CODE 77
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
