# Warnings for brisvox's own targets (never for third-party code).
function(brisvox_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Wnon-virtual-dtor)
endfunction()
