/*
 * catalogd's bind-address agent for Hive Metastore 2.3 (loaded with -javaagent).
 *
 * HMS 2.3 has no bind-host setting: HiveMetaStore.startMetaStore asks
 * HiveAuthUtils.getServerSocket(null, port) for its Thrift server socket, and a
 * null host means every interface. This agent rewrites that one method as the
 * class is loaded, so that a null or empty host becomes the agent's argument
 * (e.g. -javaagent:agent.jar=127.0.0.1): three instructions at the method's
 * start, nothing else changes. It uses the ASM copy in the pyspark wheel
 * (xbean-asm9-shaded). If the rewrite fails the HMS starts unchanged and the
 * failure is printed; catalogd checks where the HMS actually listens.
 */
package catalogd.hms;

import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.security.ProtectionDomain;
import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

public final class LoopbackAgent implements ClassFileTransformer {
    private static final String TARGET = "org/apache/hadoop/hive/common/auth/HiveAuthUtils";
    private static final String METHOD = "getServerSocket";
    private static final String DESCRIPTOR =
        "(Ljava/lang/String;I)Lorg/apache/thrift/transport/TServerSocket;";
    private static volatile String bindHost = "127.0.0.1";

    public static void premain(String args, Instrumentation instrumentation) {
        if (args != null && !args.isEmpty()) {
            bindHost = args;
        }
        instrumentation.addTransformer(new LoopbackAgent());
    }

    /** The host the server socket binds: the one asked for, else the agent's. */
    public static String host(String requested) {
        return requested == null || requested.isEmpty() ? bindHost : requested;
    }

    @Override
    public byte[] transform(
        ClassLoader loader, String name, Class<?> redefined, ProtectionDomain domain,
        byte[] bytes) {
        if (!TARGET.equals(name)) {
            return null;
        }
        try {
            ClassReader reader = new ClassReader(bytes);
            ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
            reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
                @Override
                public MethodVisitor visitMethod(
                    int access, String method, String descriptor, String signature,
                    String[] exceptions) {
                    MethodVisitor visitor =
                        super.visitMethod(access, method, descriptor, signature, exceptions);
                    if (!METHOD.equals(method) || !DESCRIPTOR.equals(descriptor)) {
                        return visitor;
                    }
                    return new MethodVisitor(Opcodes.ASM9, visitor) {
                        @Override
                        public void visitCode() {
                            super.visitCode();
                            // host = LoopbackAgent.host(host): no branch, so no new stack frames.
                            super.visitVarInsn(Opcodes.ALOAD, 0);
                            super.visitMethodInsn(
                                Opcodes.INVOKESTATIC, "catalogd/hms/LoopbackAgent", "host",
                                "(Ljava/lang/String;)Ljava/lang/String;", false);
                            super.visitVarInsn(Opcodes.ASTORE, 0);
                        }
                    };
                }
            }, 0);
            System.err.println("catalogd: the metastore's Thrift socket binds " + bindHost);
            return writer.toByteArray();
        } catch (Throwable failure) {
            System.err.println("catalogd: cannot set the metastore's bind address: " + failure);
            return null;
        }
    }
}
