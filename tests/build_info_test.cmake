# Runs common/build_info.cmake the way the build does and checks the header
# it writes: the commit of a git checkout, "unknown" for a tree without
# .git (a source tarball), the -DTAUPS_GIT_COMMIT override, and no rewrite
# when nothing changed.
#   cmake -DSCRIPT=.../build_info.cmake -DSOURCE_DIR=<checkout> -DWORK_DIR=<scratch> -P build_info_test.cmake
foreach(var SCRIPT SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "build_info_test: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/tarball")

function(generate source out commit)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${source} -DOUTPUT=${out}
            -DVERSION=9.8.7 -DBUILD_TYPE=Release -DGIT_COMMIT=${commit}
            -P ${SCRIPT}
    RESULT_VARIABLE result)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "build_info.cmake failed for ${source}")
  endif()
endfunction()

function(expect_line file line)
  file(READ "${file}" text)
  string(FIND "${text}" "${line}\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${file} lacks '${line}':\n${text}")
  endif()
endfunction()

# No .git: unknown.
generate("${WORK_DIR}/tarball" "${WORK_DIR}/tarball.h" "")
expect_line("${WORK_DIR}/tarball.h" "#define TAUPS_BUILD_COMMIT \"unknown\"")
expect_line("${WORK_DIR}/tarball.h" "#define TAUPS_BUILD_VERSION \"9.8.7\"")
expect_line("${WORK_DIR}/tarball.h" "#define TAUPS_BUILD_TYPE \"Release\"")

# A packager's override wins.
generate("${WORK_DIR}/tarball" "${WORK_DIR}/override.h" "0123456789ab")
expect_line("${WORK_DIR}/override.h" "#define TAUPS_BUILD_COMMIT \"0123456789ab\"")

# A git checkout: the 12-digit HEAD (optionally -dirty), asked from git here
# independently of the script.
find_program(GIT git)
if(GIT AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE head OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE git_result)
  if(git_result EQUAL 0)
    generate("${SOURCE_DIR}" "${WORK_DIR}/git.h" "")
    file(READ "${WORK_DIR}/git.h" text)
    if(NOT text MATCHES "#define TAUPS_BUILD_COMMIT \"([0-9a-f]+)(-dirty)?\"")
      message(FATAL_ERROR "no commit in:\n${text}")
    endif()
    string(LENGTH "${CMAKE_MATCH_1}" length)
    if(NOT length EQUAL 12)
      message(FATAL_ERROR "commit '${CMAKE_MATCH_1}' is not 12 digits")
    endif()
    # HEAD may move between the two git calls when others commit; then the
    # script's commit must at least be one of this repository.
    if(NOT CMAKE_MATCH_1 STREQUAL head)
      execute_process(COMMAND ${GIT} -C ${SOURCE_DIR} cat-file -e
                              "${CMAKE_MATCH_1}^{commit}"
                      RESULT_VARIABLE known)
      if(NOT known EQUAL 0)
        message(FATAL_ERROR "commit ${CMAKE_MATCH_1} is not in ${SOURCE_DIR}")
      endif()
    endif()
  endif()
endif()

# Unchanged values leave the file alone (nothing recompiles).
file(TIMESTAMP "${WORK_DIR}/tarball.h" before "%s%f" UTC)
execute_process(COMMAND ${CMAKE_COMMAND} -E sleep 1.1)
generate("${WORK_DIR}/tarball" "${WORK_DIR}/tarball.h" "")
file(TIMESTAMP "${WORK_DIR}/tarball.h" after "%s%f" UTC)
if(NOT before STREQUAL after)
  message(FATAL_ERROR "tarball.h was rewritten with the same values")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
message(STATUS "build_info.cmake: all checks passed")
