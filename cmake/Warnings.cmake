# Project warning set, applied per target so third-party headers (marked SYSTEM) stay quiet.
add_library(coupler_warnings INTERFACE)
target_compile_options(coupler_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                            -Wcast-align -Wunused -Woverloaded-virtual
                            -Wimplicit-fallthrough>)
if(DEFINED ENV{CI} OR COUPLER_WERROR)
  target_compile_options(coupler_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
