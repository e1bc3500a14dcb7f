# SPDX-License-Identifier: Apache-2.0
# packaging/deb.cmake: the Debian packages, made by CPack (packaging/README.md):
#   tsmine          the daemon, the tool, the configuration, the unit, the manual pages
#   tsmine-bench    tsmine-bench and tsmine-loadgen (install(... COMPONENT bench))
#   *-dbgsym .ddeb  their debug symbols; the binaries in the packages are stripped
# Every install() rule of the tree names its component: tsmine or bench.
# Build them with `tools/dev package` (prefix /usr, Debian's build flags); a build
# configured with another prefix refuses to be packaged (its paths are in the unit and
# the manual pages), instead of making a package of /usr/local.

# The Debian revision: the Debian version is PROJECT_VERSION-TSM_DEB_REVISION, which
# the top entry of packaging/changelog must name.
set(TSM_DEB_REVISION 1)
set(TSM_DEB_VERSION ${PROJECT_VERSION}-${TSM_DEB_REVISION})
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/changelog tsm_changelog_top LIMIT_COUNT 1)
if(NOT tsm_changelog_top MATCHES "^tsmine \\(${TSM_DEB_VERSION}\\) ")
  message(FATAL_ERROR "packaging/changelog's top entry (${tsm_changelog_top}) is not "
                      "for version ${TSM_DEB_VERSION}: add an entry for it")
endif()

# The changelog and copyright of each package's /usr/share/doc/PACKAGE.
set(tsm_changelog_gz ${CMAKE_CURRENT_BINARY_DIR}/packaging/changelog.Debian.gz)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/packaging)
add_custom_command(OUTPUT ${tsm_changelog_gz}
                   COMMAND sh -c "gzip -9nc \"$0\" > \"$1\"" ${CMAKE_CURRENT_LIST_DIR}/changelog
                           ${tsm_changelog_gz}
                   DEPENDS ${CMAKE_CURRENT_LIST_DIR}/changelog
                   COMMENT "Compressing packaging/changelog" VERBATIM)
add_custom_target(tsm_deb_changelog ALL DEPENDS ${tsm_changelog_gz})
foreach(comp tsmine bench)
  if(comp STREQUAL "bench")
    set(pkg tsmine-bench)
  else()
    set(pkg tsmine)
  endif()
  install(FILES ${tsm_changelog_gz} ${CMAKE_CURRENT_LIST_DIR}/copyright
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${pkg} COMPONENT ${comp})
endforeach()
install(FILES README.md docs/protocol.md DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/tsmine
        COMPONENT tsmine)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tsmine)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE ${TSM_DEB_REVISION})
# A placeholder of the project's own (packaging/README.md): lintian refuses localhost.
set(CPACK_PACKAGE_CONTACT "tsmine maintainers <maintainers@tsmine.org>")
# Each package's summary is the first line of its description (below): empty, the
# summary that CPack would put before both (PROJECT_DESCRIPTION) is left out.
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_TSM_CONFIGURED_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/check-prefix.cmake)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/fix-dbgsym.cmake)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL tsmine bench)
set(CPACK_DEBIAN_TSMINE_PACKAGE_NAME tsmine)
set(CPACK_DEBIAN_BENCH_PACKAGE_NAME tsmine-bench)
set(CPACK_DEBIAN_TSMINE_PACKAGE_SECTION net)
# Stripped binaries; their symbols in tsmine-dbgsym and tsmine-bench-dbgsym (.ddeb).
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_TSMINE_DESCRIPTION
    "${PROJECT_DESCRIPTION}
tsmine finds anomalies (discords) and repeated patterns (motifs) in time
series, exactly: the subsequences farthest from, or closest to, their nearest
neighbour under the z-normalised Euclidean distance, and the matrix profile.

This package holds the streaming daemon tsmined, which takes samples over
ZeroMQ, keeps a sliding window of every stream, publishes alerts, answers
control requests, serves Prometheus metrics and checkpoints its state, as a
sandboxed systemd service; and the command-line tool tsmine, which runs the
same kernels on files and talks to the daemon.")
set(CPACK_DEBIAN_BENCH_DESCRIPTION
    "benchmarks of the tsmine anomaly and motif detector
tsmine finds anomalies (discords) and repeated patterns (motifs) in time
series.

This package holds tsmine-bench, which times the kernels (matrix profile,
discords, motifs, sets, shapelets) on synthetic series, and tsmine-loadgen,
which drives a running tsmined with many streams and measures its throughput.")

# Runtime dependencies: dpkg-shlibdeps reads them off the binaries (libzmq5,
# libprotobuf-c1, libconfig9, libsystemd0, libmicrohttpd12, libgomp1, zlib1g, ... in the
# versions of the distribution it is built on); a fixed list where it is missing.
# The maintainer scripts need adduser where systemd-sysusers is not installed.
find_program(TSM_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(TSM_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS "adduser")
else()
  set(CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS
      "adduser, libc6, libgomp1, zlib1g, libzmq5, libczmq4, libprotobuf-c1, libconfig9, "
      "libsystemd0, libmicrohttpd12 | libmicrohttpd12t64")
  if(TSMINE_HAVE_ALERTMANAGER)
    string(APPEND CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS ", libcurl4 | libcurl4t64")
  endif()
  if(TSMINE_HAVE_MQTT)
    string(APPEND CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS ", libmosquitto1")
  endif()
  if(TSMINE_HAVE_PLOT)
    string(APPEND CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS ", libcairo2, libfontconfig1")
  endif()
  string(REPLACE ";" "" CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS "${CPACK_DEBIAN_TSMINE_PACKAGE_DEPENDS}")
  set(CPACK_DEBIAN_BENCH_PACKAGE_DEPENDS
      "libc6, libgomp1, zlib1g, libzmq5, libczmq4, libprotobuf-c1")
endif()
if(TARGET tsmined)
  # The configuration is a conffile (local edits survive upgrades); the maintainer
  # scripts create the user, enable and start the service (systemd/README.md).
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/debian/conffiles "${TSM_CONFDIR_FULL}/tsmined.conf\n")
  set(CPACK_DEBIAN_TSMINE_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/debian/conffiles
      ${CMAKE_CURRENT_SOURCE_DIR}/systemd/postinst ${CMAKE_CURRENT_SOURCE_DIR}/systemd/prerm
      ${CMAKE_CURRENT_SOURCE_DIR}/systemd/postrm)
  set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
endif()
include(CPack)
