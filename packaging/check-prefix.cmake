# SPDX-License-Identifier: Apache-2.0
# CPACK_PRE_BUILD_SCRIPTS of packaging/deb.cmake: refuses to package a build configured
# for another prefix than /usr (CPACK_TSM_CONFIGURED_PREFIX), whose unit and manual
# pages name paths that the package does not have.
if(NOT CPACK_TSM_CONFIGURED_PREFIX STREQUAL "/usr")
  message(FATAL_ERROR "tsmine packages install to /usr, but this build was configured "
                      "with CMAKE_INSTALL_PREFIX=${CPACK_TSM_CONFIGURED_PREFIX}: build them "
                      "with `tools/dev package` (or configure with -DCMAKE_INSTALL_PREFIX=/usr)")
endif()
