# C++ stubs of gRPC's own service protos (grpc.health.v1, grpc.reflection.
# v1alpha) from Debian's grpc-proto package, for tests that talk to a shard
# the way generic tools do. Sets TAUPS_GRPC_STD_PROTOS_FOUND; when found,
# defines the static library taups_grpc_std_protos.
set(TAUPS_GRPC_PROTO_DIR /usr/share/grpc-proto CACHE PATH
    "Root of gRPC's service protos (Debian: grpc-proto)")
set(_std_protos grpc/health/v1/health.proto
                grpc/reflection/v1alpha/reflection.proto)
set(TAUPS_GRPC_STD_PROTOS_FOUND ON)
foreach(p IN LISTS _std_protos)
  if(NOT EXISTS ${TAUPS_GRPC_PROTO_DIR}/${p})
    set(TAUPS_GRPC_STD_PROTOS_FOUND OFF)
  endif()
endforeach()
if(TAUPS_GRPC_STD_PROTOS_FOUND)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/grpc_std_protos)
  set(_generated "")
  foreach(p IN LISTS _std_protos)
    string(REGEX REPLACE "\\.proto$" "" stem ${p})
    list(APPEND _generated ${_out}/${stem}.pb.cc ${_out}/${stem}.grpc.pb.cc)
  endforeach()
  file(MAKE_DIRECTORY ${_out})
  add_custom_command(
    OUTPUT ${_generated}
    COMMAND protobuf::protoc --proto_path=${TAUPS_GRPC_PROTO_DIR}
      --cpp_out=${_out} --grpc_out=${_out}
      --plugin=protoc-gen-grpc=${TAUPS_GRPC_CPP_PLUGIN} ${_std_protos}
    WORKING_DIRECTORY ${TAUPS_GRPC_PROTO_DIR}
    COMMENT "protoc gRPC health and reflection protos")
  add_library(taups_grpc_std_protos STATIC ${_generated})
  target_include_directories(taups_grpc_std_protos PUBLIC ${_out})
  target_link_libraries(taups_grpc_std_protos PUBLIC gRPC::grpc++ protobuf::libprotobuf)
  target_compile_options(taups_grpc_std_protos PRIVATE -w)
else()
  message(STATUS "tauPS: ${TAUPS_GRPC_PROTO_DIR} lacks gRPC's health and "
                 "reflection protos (Debian: grpc-proto); grpc_health_process_test "
                 "will report skipped")
endif()
