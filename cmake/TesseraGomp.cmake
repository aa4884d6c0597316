# Debian's oneDNN runs on OpenMP (libgomp); the convolution kernels set its team size, and
# linking libgomp directly keeps one OpenMP runtime whatever the compiler. Both the build and
# the installed package define Tessera::gomp from here, so a consumer finds libgomp under its
# own prefixes rather than at the path it had on the machine that built Tessera.
if(NOT TARGET Tessera::gomp)
  find_library(TESSERA_GOMP_LIBRARY NAMES gomp libgomp.so.1)
  if(TESSERA_GOMP_LIBRARY)
    add_library(Tessera::gomp UNKNOWN IMPORTED)
    set_target_properties(Tessera::gomp PROPERTIES IMPORTED_LOCATION "${TESSERA_GOMP_LIBRARY}")
  endif()
endif()
