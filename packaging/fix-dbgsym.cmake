# SPDX-License-Identifier: Apache-2.0
# CPACK_POST_BUILD_SCRIPTS of packaging/deb.cmake: mends the -dbgsym packages that
# CPack 3.25 makes, as dh_strip makes them: their md5sums list the files' paths in
# CPack's build tree instead of the package's (lintian: md5sums-lists-nonexistent-file),
# and they have no /usr/share/doc/PACKAGE-dbgsym, which Debian makes a link to the doc
# directory of the package whose symbols they hold (its copyright and changelog).
foreach(ddeb IN LISTS CPACK_PACKAGE_FILES)
  if(NOT ddeb MATCHES "/([^/_]+)-dbgsym_[^/]*\\.ddeb$")
    continue()
  endif()
  set(pkg ${CMAKE_MATCH_1})
  set(tree ${ddeb}.tree)
  file(REMOVE_RECURSE ${tree})
  execute_process(COMMAND dpkg-deb -R ${ddeb} ${tree} COMMAND_ERROR_IS_FATAL ANY)
  file(MAKE_DIRECTORY ${tree}/usr/share/doc)
  file(CREATE_LINK ${pkg} ${tree}/usr/share/doc/${pkg}-dbgsym SYMBOLIC)
  execute_process(COMMAND sh -c "find usr -type f | LC_ALL=C sort | xargs md5sum > DEBIAN/md5sums"
                  WORKING_DIRECTORY ${tree} COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND dpkg-deb --root-owner-group -b ${tree} ${ddeb} OUTPUT_QUIET
                  COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE ${tree})
endforeach()
