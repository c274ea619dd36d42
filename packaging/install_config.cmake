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
# The AppArmor profile that lets cordon make user namespaces where AppArmor restricts them: it names the installed
# binary. AppArmor reads /etc/apparmor.d only, so a system install (prefix /usr or /usr/local) puts it there; any
# other prefix gets it below PREFIX/etc/apparmor.d, for the administrator to copy (`cordon doctor` says when).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/usr/local")
  set(CORDON_APPARMOR_DIR /etc/apparmor.d)
else()
  set(CORDON_APPARMOR_DIR "${CORDON_ETC}/apparmor.d")
endif()
set(CORDON_BINARY "${CORDON_BIN}/cordon")
configure_file(${CORDON_PACKAGING_SOURCE}/apparmor/cordon.in ${CORDON_PACKAGING_BINARY}/apparmor/cordon @ONLY)
file(INSTALL ${CORDON_PACKAGING_BINARY}/apparmor/cordon DESTINATION "${CORDON_APPARMOR_DIR}")
# The administrator's policy: installed when there is none, never overwritten (the package makes it a
# conffile, so dpkg asks before replacing an edited one).
if(NOT EXISTS "$ENV{DESTDIR}${CORDON_ETC}/cordon/egress.json")
  file(INSTALL ${CORDON_PACKAGING_SOURCE}/egress.json DESTINATION "${CORDON_ETC}/cordon")
endif()
