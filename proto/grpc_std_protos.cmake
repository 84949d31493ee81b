# C++ messages and stubs of gRPC's own service protos (grpc.health.v1,
# grpc.reflection.v1alpha) from Debian's grpc-proto package: the one home of
# the generated health protos, for ps_health_probe (worker/tools) and for
# the tests that talk to a shard the way generic tools do. When the protos
# are there, defines the static library taups_grpc_std_protos (one object
# per proto, so the probe links only health's); callers test
# if(TARGET taups_grpc_std_protos).
set(TAUPS_GRPC_PROTO_DIR /usr/share/grpc-proto CACHE PATH
    "Root of gRPC's service protos (Debian: grpc-proto)")
set(_std_protos grpc/health/v1/health.proto
                grpc/reflection/v1alpha/reflection.proto)
set(_found ON)
foreach(p IN LISTS _std_protos)
  if(NOT EXISTS ${TAUPS_GRPC_PROTO_DIR}/${p})
    set(_found OFF)
  endif()
endforeach()
if(_found)
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
  message(WARNING "tauPS: ${TAUPS_GRPC_PROTO_DIR} lacks gRPC's health and "
                  "reflection protos (Debian: grpc-proto): ps_health_probe is "
                  "not built, and grpc_health_process_test and "
                  "health_probe_process_test will report skipped")
endif()
