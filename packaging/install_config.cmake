# Install-time part of packaging/CMakeLists.txt: the files whose content or place depends on the install
# prefix. CMAKE_INSTALL_PREFIX is the one given at install time; file(INSTALL) honours DESTDIR.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(CORDON_ETC /etc)
else()
  set(CORDON_ETC "${CMAKE_INSTALL_PREFIX}/etc")
endif()
set(CORDON_BIN "${CMAKE_INSTALL_PREFIX}/bin")
configure_file(${CORDON_PACKAGING_SOURCE}/cordon-proxy.service.in ${CORDON_PACKAGING_BINARY}/cordon-proxy.service
               @ONLY)
file(INSTALL ${CORDON_PACKAGING_BINARY}/cordon-proxy.service
     DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
# The administrator's policy: installed when there is none, never overwritten (the package makes it a
# conffile, so dpkg asks before replacing an edited one).
if(NOT EXISTS "$ENV{DESTDIR}${CORDON_ETC}/cordon/egress.json")
  file(INSTALL ${CORDON_PACKAGING_SOURCE}/egress.json DESTINATION "${CORDON_ETC}/cordon")
endif()
