#===- LinAttnDocs.cmake - Keep docs/reference in sync with the ODS -------===//
#
# docs/reference/ holds the op, attribute and pass documentation that
# mlir-tblgen generates from the .td files (add_mlir_doc, into
# <build>/docs/LinAttn/). It is committed so that it can be read without a
# build; this script keeps the two equal:
#
#   cmake -DGENERATED=<build>/docs/LinAttn -DCOMMITTED=<src>/docs/reference
#         -DMODE=update|check -P cmake/LinAttnDocs.cmake
#
# `ninja linattn-docs` runs MODE=update; the lit test test/Docs/reference.test
# runs MODE=check, which fails on any difference and prints what to run.
#
#===----------------------------------------------------------------------===//

cmake_policy(VERSION 3.20)

foreach(var GENERATED COMMITTED MODE)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "LinAttnDocs.cmake: -D${var}=... is required")
  endif()
endforeach()

file(GLOB generated RELATIVE ${GENERATED} ${GENERATED}/*.md)
file(GLOB committed RELATIVE ${COMMITTED} ${COMMITTED}/*.md)
if(NOT generated)
  message(FATAL_ERROR "no generated docs in ${GENERATED}: build the "
    "`linattn-doc-gen` target first")
endif()

if(MODE STREQUAL "update")
  file(MAKE_DIRECTORY ${COMMITTED})
  foreach(md IN LISTS committed)
    if(NOT md IN_LIST generated)
      file(REMOVE ${COMMITTED}/${md})
      message(STATUS "docs/reference: removed ${md}")
    endif()
  endforeach()
  foreach(md IN LISTS generated)
    configure_file(${GENERATED}/${md} ${COMMITTED}/${md} COPYONLY)
  endforeach()
  message(STATUS "docs/reference: up to date (${generated})")
  return()
endif()

set(stale)
foreach(md IN LISTS generated committed)
  if(md IN_LIST stale)
    continue()
  endif()
  if(NOT EXISTS ${COMMITTED}/${md} OR NOT EXISTS ${GENERATED}/${md})
    list(APPEND stale ${md})
    continue()
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files
    ${GENERATED}/${md} ${COMMITTED}/${md} RESULT_VARIABLE different)
  if(different)
    list(APPEND stale ${md})
    # The difference itself, for the test log.
    execute_process(COMMAND diff -u ${COMMITTED}/${md} ${GENERATED}/${md})
  endif()
endforeach()
if(stale)
  message(FATAL_ERROR "docs/reference is stale (${stale}) with respect to "
    "the .td files. Refresh it with `ninja -C <build dir> linattn-docs` and "
    "commit the result.")
endif()
message(STATUS "docs/reference: up to date")
