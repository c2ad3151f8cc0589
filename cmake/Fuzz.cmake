# -DCOUPLER_FUZZ=ON: libFuzzer targets under ASan + UBSan. Needs clang (CC=clang CXX=clang++)
# and Debian's libclang-rt-dev. Everything is instrumented; CUDA is left out.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "coupler: COUPLER_FUZZ=ON needs clang: configure with "
                      "CC=clang CXX=clang++ (apt-get install clang libclang-rt-dev)")
endif()
set(COUPLER_WITH_CUDA OFF CACHE STRING "" FORCE)
# pointer-overflow is off: Debian's rapidjson 1.1.0 computes `nullptr + n` in
# internal::Stack::Reserve on every first use (fixed upstream after 1.1.0), which would stop
# every JSON input before it reaches our code.
set(COUPLER_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize=pointer-overflow
                           -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_compile_options(${COUPLER_SANITIZE_FLAGS} -fsanitize=fuzzer-no-link)
add_link_options(${COUPLER_SANITIZE_FLAGS})
